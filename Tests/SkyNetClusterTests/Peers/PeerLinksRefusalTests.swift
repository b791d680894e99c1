import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetTransport
@testable import SkyNetWire
import Testing

/// "Every peer refused" is decided in the step that acts on it: a peer that connects while the
/// last refusal is being reported counts.
@Suite(.timeLimit(.minutes(3)))
struct PeerLinksRefusalTests {
    /// A node on 127.0.0.1 that hands each hello it reads to `answer`, with its number (0 first).
    final class HelloNode: Sendable {
        let listener: Listener
        private let hellos = Locked<[Connection]>([])

        init(_ answer: @escaping @Sendable (Connection, Int) -> Void) async throws {
            listener = try await Listener.bind(host: "127.0.0.1", port: 0)
            try listener.start { [hellos] socket, peer in
                let connection = Connection(socket: socket, peer: peer)
                connection.start(onEvent: { event in
                    guard case .line(let line) = event, case .hello? = try? Request.decode(line) else { return }
                    let number = hellos.withLock { $0.append(connection); return $0.count - 1 }
                    answer(connection, number)
                })
            }
        }

        var count: Int { hellos.withLock { $0.count } }

        func stop() {
            listener.stop()
            for connection in hellos.withLock({ $0 }) { connection.close() }
        }
    }

    /// Hellos held until `open()`, then answered with `line`, as later ones are at once.
    final class Gate: Sendable {
        private let state = Locked<(open: Bool, held: [Connection])>((false, []))
        let line: [UInt8]
        init(answering line: [UInt8]) { self.line = line }

        func answer(_ connection: Connection) {
            if state.withLock({ state in if !state.open { state.held.append(connection) }; return state.open }) {
                try? connection.send(line)
            }
        }

        func open() {
            let held = state.withLock { state in
                state.open = true
                defer { state.held = [] }
                return state.held
            }
            for connection in held { try? connection.send(line) }
        }
    }

    @Test func aPeerThatConnectsWhileTheLastRefusalIsReportedMeansNotEveryPeerRefused() async throws {
        let refusal = WireError(code: .unauthorized, message: "wrong token").line
        let welcome = Reply.welcome(version: 1, name: "alpha", capacity: 1, jobs: nil).line
        // Alpha refuses its first hello and welcomes the next; beta refuses, but only once
        // alpha's refusal is in: beta's refusal is the one that makes every peer refused.
        let alpha = try await HelloNode { connection, number in try? connection.send(number == 0 ? refusal : welcome) }
        let betaGate = Gate(answering: refusal)
        let beta = try await HelloNode { connection, _ in betaGate.answer(connection) }
        let alphaConnected = AsyncSignal<Void>()
        // A hello bound that a loaded machine cannot run out: a timed-out hello is reported as
        // unreachable, not refused, and the test's order would not hold.
        var settings = PeerLinks.Settings(capacity: 1, timeout: .seconds(60))
        settings.refusalRetryDelay = .milliseconds(50)
        let cluster = ClusterConfig(nodes: [.init(name: "alpha", port: alpha.listener.port), .init(name: "beta", port: beta.listener.port)])
        let links = PeerLinks(cluster: cluster, systems: Systems(), settings: settings) { event in
            switch event {
            case .refused("alpha", _, _): betaGate.open()
            // Alpha asks again and connects while beta's refusal is being reported.
            // (A hang guard only: it ends when alpha connects, which a saturated CPU, as under
            // the thread sanitizer, can hold up for tens of seconds.)
            case .refused("beta", _, _): _ = try? await withTimeout(.seconds(60)) { await alphaConnected.value }
            case .connected("alpha", _): alphaConnected.fulfil(())
            default: break
            }
        }
        // Beta's link asks again only after its refusal's report, and what follows it, is done.
        var waited: (any Error)?
        do { try await awaitState(upTo: .seconds(120)) { beta.count >= 2 } } catch { waited = error }
        await links.stop()
        alpha.stop()
        beta.stop()
        if let waited { throw waited }
        #expect(alphaConnected.current != nil)
        #expect(links.everyPeerRefused.current == nil)
    }
}
