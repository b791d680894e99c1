import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A scan whose files travel uses only peers that offer files (one that does not is reported
/// once as `lacks-files`), and gives each every basefile, stored, before its first task; a node
/// that refuses a basefile is reported with its words and not used.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct PeerLinksFilesTests {
    /// A fake node: offers files or not, stores each basefile (path and bytes, digest checked)
    /// or refuses it with `refusal`; counts its hellos.
    final class FakeFileNode: Sendable {
        let listener: Listener
        let hellos = Counter()
        let stored = Locked<[(String, [UInt8])]>([])

        init(name: String, offersFiles: Bool, refusal: WireError? = nil) async throws {
            listener = try await Listener.bind(host: "127.0.0.1", port: 0)
            let hellos = self.hellos, stored = self.stored
            try listener.start { socket, peer in
                let connection = Connection(socket: socket, peer: peer)
                let uploads = Locked<[Int: (String, [UInt8])]>([:])
                connection.start(onEvent: { event in
                    guard case .line(let line) = event, let request = try? Request.decode(line) else { return }
                    switch request {
                    case .hello:
                        hellos.increment()
                        try? connection.send(Reply.welcome(version: 1, name: name, capacity: 2, jobs: ["t": "./process.sh {}"],
                                                           files: offersFiles ? FileSupport(maxFileSize: 1 << 30) : nil).line)
                    case .basefile(let basefile):
                        uploads.withLock { $0[basefile.id] = (basefile.path, []) }
                    case .chunk(let chunk):
                        uploads.withLock { $0[chunk.id]?.1 += Array(chunk.bytes) }
                    case .fileEnd(let end):
                        guard let (path, bytes) = uploads.withLock({ $0.removeValue(forKey: end.id) }), SHA256.hash(bytes) == end.sha256 else { return }
                        if let refusal {
                            try? connection.send(Reply.error(WireError(code: refusal.code, message: refusal.message, id: end.id)).line)
                        } else {
                            stored.withLock { $0.append((path, bytes)) }
                            try? connection.send(Reply.stored(id: end.id).line)
                        }
                    default:
                        break
                    }
                })
            }
        }

        var port: Int { listener.port }
    }

    private func withLinks(to nodes: [(String, FakeFileNode)], spec: TransferSpec, roots: ReturnRoots? = nil,
                           _ body: (PeerLinks, Systems, PeerLinksJobTests.Events) async throws -> Void) async throws {
        let systems = Systems(), events = PeerLinksJobTests.Events()
        var settings = PeerLinks.Settings(capacity: 2, timeout: .seconds(5), job: "t")
        settings.refusalRetryDelay = .milliseconds(100)
        settings.transfer = spec
        settings.returnRoots = roots
        let cluster = ClusterConfig(nodes: nodes.map { .init(name: $0.0, port: $0.1.port) })
        let links = PeerLinks(cluster: cluster, systems: systems, settings: settings) { events.append($0) }
        do {
            try await body(links, systems, events)
        } catch {
            await links.stop()
            for (_, node) in nodes { node.listener.stop() }
            throw error
        }
        await links.stop()
        for (_, node) in nodes { node.listener.stop() }
    }

    @Test func aPeerWithoutFilesIsReportedOnceAsLacksFilesAndNotUsed() async throws {
        let beta = try await FakeFileNode(name: "beta", offersFiles: false)
        let gamma = try await FakeFileNode(name: "gamma", offersFiles: true)
        try await withLinks(to: [("beta", beta), ("gamma", gamma)], spec: TransferSpec(transfer: true)) { links, systems, events in
            try await beta.hellos.wait(untilAtLeast: 3)  // asked again, every 0.1 s here
            try await events.waitFor { if case .connected("gamma", _) = $0 { true } else { false } }
            #expect(await systems.names == ["gamma"])
            #expect(events.lines.filter { $0.contains("beta") } == [
                "[Cluster] Refused by beta: lacks-files (its welcome offers no files: an older skynet, or one started with --no-files)",
            ])
            #expect(links.everyPeerRefused.current == nil)
        }
    }

    @Test func aScanWithoutFilesUsesAPeerWithoutFiles() async throws {
        let beta = try await FakeFileNode(name: "beta", offersFiles: false)
        try await withLinks(to: [("beta", beta)], spec: TransferSpec()) { _, systems, events in
            try await events.waitFor { if case .connected("beta", _) = $0 { true } else { false } }
            #expect(await systems.names == ["beta"])
        }
    }

    @Test func whenEveryPeerLacksFilesTheScanHearsSo() async throws {
        let beta = try await FakeFileNode(name: "beta", offersFiles: false)
        try await withLinks(to: [("beta", beta)], spec: TransferSpec(cleanup: true)) { links, systems, _ in
            let why = try await withTimeout(.seconds(30)) { await links.everyPeerRefused.value }
            #expect(why.contains("lacks-files") || why.contains("offers no files"))
            #expect(await systems.names == [])
        }
    }

    @Test func everyBasefileIsStoredBeforeThePeerGetsATask() async throws {
        try await ReturnSandbox.with { sandbox in
            let script = Array("#!/bin/sh\necho $1\n".utf8), model = ReturnSandbox.random(700_000, seed: 5)
            try Data(script).write(to: URL(fileURLWithPath: sandbox.here + "/process.sh"))
            try FileManager.default.createDirectory(atPath: sandbox.abs + "/opt", withIntermediateDirectories: true)
            try Data(model).write(to: URL(fileURLWithPath: sandbox.abs + "/opt/model.bin"))
            let gamma = try await FakeFileNode(name: "gamma", offersFiles: true)
            let spec = TransferSpec(basefiles: [try TransferPath("process.sh"), try TransferPath("/opt/model.bin")])
            try await withLinks(to: [("gamma", gamma)], spec: spec, roots: sandbox.roots) { _, systems, events in
                try await events.waitFor { if case .connected("gamma", _) = $0 { true } else { false } }
                // Added only once both were stored: no task can have gone before them.
                let stored = gamma.stored.withLock { $0 }
                #expect(stored.map(\.0) == ["process.sh", "opt/model.bin"])
                #expect(stored.map(\.1) == [script, model])
                #expect(await systems.names == ["gamma"])
            }
        }
    }

    @Test func aRefusedBasefileIsReportedInTheNodesWordsAndThePeerIsNotUsed() async throws {
        try await ReturnSandbox.with { sandbox in
            try Data("x".utf8).write(to: URL(fileURLWithPath: sandbox.here + "/process.sh"))
            let refusal = WireError(code: .noSpace, message: "no space on gpu1: 12 MiB free, 40 MiB needed")
            let gpu1 = try await FakeFileNode(name: "gpu1", offersFiles: true, refusal: refusal)
            let spec = TransferSpec(basefiles: [try TransferPath("process.sh")])
            try await withLinks(to: [("gpu1", gpu1)], spec: spec, roots: sandbox.roots) { links, systems, events in
                try await gpu1.hellos.wait(untilAtLeast: 3)
                _ = try await withTimeout(.seconds(30)) { await links.everyPeerRefused.value }
                #expect(events.lines == ["[Cluster] Refused by gpu1: no-space (no space on gpu1: 12 MiB free, 40 MiB needed)"])
                #expect(await systems.names == [])
            }
        }
    }

    @Test func aMissingBasefileIsReportedAndNothingIsSent() async throws {
        try await ReturnSandbox.with { sandbox in
            let gamma = try await FakeFileNode(name: "gamma", offersFiles: true)
            let spec = TransferSpec(basefiles: [try TransferPath("missing.sh")])
            try await withLinks(to: [("gamma", gamma)], spec: spec, roots: sandbox.roots) { links, systems, events in
                _ = try await withTimeout(.seconds(30)) { await links.everyPeerRefused.value }
                #expect(events.lines.count == 1)
                #expect(events.lines.first?.hasPrefix("[Cluster] Refused by gamma: bad-file (--basefile missing.sh: cannot send missing.sh") == true)
                #expect(gamma.stored.withLock { $0.isEmpty })
                #expect(await systems.names == [])
            }
        }
    }
}
