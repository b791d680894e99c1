import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetTransport
#if canImport(Glibc)
import Glibc
import SkyNetTestSupport
#endif

/// Silent sockets from many addresses, reconnecting as soon as the node closes them, against a
/// real client whose hello the node holds back in its handshake: a connection that has sent a
/// valid hello is never pushed out by a silent one.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct NodeAdmissionTests {
    let auth = AuthHandshakeTests()

    /// `perAddress` silent sockets from each of `addresses`, each reconnected as soon as the
    /// node closes it, until `stop`: one thread per address, polling its sockets.
    final class SilentFlood: Sendable {
        private let stopped = Locked(false)
        private let open = Locked(0)
        let reconnects = Counter()
        private let done: [Flag]

        init(port: Int, addresses: [String], perAddress: Int) {
            done = addresses.map { _ in Flag() }
            for (address, done) in zip(addresses, done) {
                startThread(named: "test-flood") { [self] in
                    var sockets = (0..<perAddress).compactMap { _ in try? connectFrom(address, toPort: port) }
                    open.withLock { $0 += sockets.count }
                    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
                    defer { buffer.deallocate() }
                    while !stopped.withLock({ $0 }) {
                        var polled = sockets.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
                        guard poll(&polled, nfds_t(polled.count), 10) > 0 else { continue }
                        var gone: [Int] = []
                        for (index, entry) in polled.enumerated() where entry.revents != 0 {
                            let count = recv(entry.fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
                            guard count <= 0 else { continue }  // the node sent something: still open
                            sockets[index].close()
                            if let again = try? connectFrom(address, toPort: port) {
                                sockets[index] = again
                                reconnects.increment()
                            } else {
                                gone.append(index)
                            }
                        }
                        // Never polled or closed again: its number may already be another test's socket.
                        for index in gone.reversed() { sockets.remove(at: index) }
                    }
                    for socket in sockets { socket.close() }
                    done.set()
                }
            }
        }

        var opened: Int { open.withLock { $0 } }

        func stop() async throws {
            stopped.withLock { $0 = true }
            for flag in done { try await flag.wait(upTo: .seconds(10)) }
        }
    }

    /// A login with the token, by hand on this thread, which watches the node's budgets while
    /// its hello waits (here, not on the test's pool, which a busy run starves for longer than
    /// the wait): the welcome's type, and whether the hello was seen held in its handshake.
    static func heldLogin(_ node: Node, name: String) throws -> (welcome: String, held: Bool) {
        var client = try RawLines(port: node.port)
        defer { client.close() }
        var initiator = LinkKey(token: Array(AuthHandshakeTests.token.utf8)).initiator()
        let first = try initiator.writeMessage(payload: Array(#"{"type":"hello","version":2,"name":"\#(name)"}"#.utf8))
        try client.send(#"{"type":"hello","version":2,"noise":"\#(first.base64)"}"#)
        var held = false
        let giveUp = ContinuousClock.now + .seconds(5)
        while !held, ContinuousClock.now < giveUp {
            held = node.admission.withLock { $0.pending.values.contains { $0.stage == .handshake && $0.held > .zero } }
            if !held { sleepOnThisThread(for: .milliseconds(1)) }
        }
        let answer = client.readLine() ?? "nothing"
        guard let noise = (jsonFields(answer)?["noise"] as? String).flatMap({ Data(base64Encoded: $0) }),
              let welcome = try? initiator.readMessage(Array(noise)) else { return (answer, held) }
        return (jsonFields(String(decoding: welcome, as: UTF8.self))?["type"] as? String ?? "no type", held)
    }

    /// 16 silent sockets from each of 127.0.0.2 to 127.0.0.5, reconnected when closed, fill the
    /// budget of connections without a hello; a client from 127.0.0.1, whose network failed a
    /// login, has each hello held a second in the handshake budget while the flood churns, and
    /// logs in every time, 10 of 10.
    @Test func aClientInItsHandshakeIsNeverPushedOutBySilentSockets() async throws {
        var backoff = LoginBackoff()
        backoff.freeFailures = 0
        backoff.delays = Backoff(first: .seconds(1), most: .seconds(1))
        try await auth.withTokenNode(backoff: backoff) { node, log in
            // One failed login: from now on each hello from 127.0.0.0/24 waits in the handshake budget.
            let refused = try await onOwnThread(named: "test-wrong") { () throws -> String in
                do {
                    let client = try EncryptedClient(port: node.port, token: "not the token, but just as long")
                    client.close()
                    return "a handshake"
                } catch let refused as EncryptedClient.Refused {
                    return jsonFields(refused.line)?["code"] as? String ?? refused.line
                }
            }
            #expect(refused == "unauthorized")
            let flood = SilentFlood(port: node.port, addresses: (2...5).map { "127.0.0.\($0)" }, perAddress: 16)
            do {
                try await awaitState { flood.opened == 64 && node.connectionCount >= 64 }
                let before = flood.reconnects.value
                var outcomes: [String] = []
                var heldInHandshake: [Bool] = []
                for round in 1...10 {
                    do {
                        let login = try await onOwnThread(named: "test-held-hello") { try Self.heldLogin(node, name: "slow\(round)") }
                        outcomes.append(login.welcome)
                        heldInHandshake.append(login.held)
                    } catch {
                        outcomes.append("\(error)")
                    }
                }
                let churn = flood.reconnects.value - before
                try await flood.stop()
                #expect(outcomes == Array(repeating: "welcome", count: 10), "\(outcomes)")
                // Each was in the handshake budget, held, while silent sockets came and went.
                #expect(heldInHandshake == Array(repeating: true, count: 10), "\(heldInHandshake)")
                // The attack was real: the node kept closing silent sockets to make room.
                #expect(churn >= 10, "only \(churn) silent sockets were pushed out")
                #expect(log.matching("[Node] Connected: slow").count == 10)
            } catch {
                try? await flood.stop()
                throw error
            }
        }
    }
}
