import Foundation
@testable import SkyNet
import SkyNetLocalHosts
import SkyNetTestSupport
import Testing

/// Membership from DNS with real processes: three nodes in network namespaces, a
/// coordinator whose /etc/hosts is the test's (`ResolverView`), and a name that resolves to
/// two of them, then three, then two again, as a headless Kubernetes Service would.
@Suite(.serialized, .enabled(if: NetworkNamespace.isAvailable && ResolverView.isAvailable,
                            "needs root, ip (apt-get install iproute2) and unshare (apt-get install util-linux)"),
       .timeLimit(.minutes(3)))
struct DNSMembershipProcessTests {
    static let name = "skynet-nodes.test"

    func events(_ lines: [String]) -> [[String: Any]] {
        lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// A line of `event` for `system`, as JSON text (the test waits for it in the output).
    func isEvent(_ event: String, of system: String) -> @Sendable (String) -> Bool {
        { $0.contains(#""event":"\#(event)""#) && $0.contains(#""system":"\#(system)""#) }
    }

    /// `skynet node` on the namespace's inside address, port 9001; returns once it listens.
    func startNode(in namespace: NetworkNamespace, token: String) async throws -> RunningProcess {
        let launcher = namespace.launcher
        let node = try RunningProcess(Array(launcher.dropFirst()) + [
            skynetBinary.path, "node", "--host", namespace.insideAddress, "--port", "9001", "--capacity", "2", "--failing-every", "0",
        ], environment: ["SKYNET_TOKEN": token], program: launcher[0])
        try await node.waitForLine(timeout: .seconds(20)) { $0.contains("listening on") }
        return node
    }

    @Test func aNameThatGrowsAndShrinksMovesTheScanWithNothingLost() async throws {
        let token = "dns-\(UUID().uuidString)"
        try await withNetworkNamespace { a in try await withNetworkNamespace { b in try await withNetworkNamespace { c in
            let nodes = [try await startNode(in: a, token: token), try await startNode(in: b, token: token),
                         try await startNode(in: c, token: token)]
            let view = try ResolverView()
            defer { view.remove() }
            try view.set([a.insideAddress, b.insideAddress], for: Self.name)
            let clusterFile = view.folder + "/cluster.json"
            try #"{"nodes":[{"name":"workers","host":"\#(Self.name)","port":9001,"every_address":true,"refresh":1}]}"#
                .write(toFile: clusterFile, atomically: false, encoding: .utf8)
            let (memberA, memberB, memberC) = ("workers/\(a.insideAddress)", "workers/\(b.insideAddress)", "workers/\(c.insideAddress)")

            let launcher = view.launcher
            let scan = try RunningProcess(Array(launcher.dropFirst()) + [
                skynetBinary.path, "scan", "--cluster", clusterFile, "--local-capacity", "0", "--total", "60", "--duration", "0.5", "--json",
            ], environment: ["SKYNET_TOKEN": token], program: launcher[0])
            // 1. Two addresses: both work.
            try await scan.waitForLine(where: isEvent("completed", of: memberA))
            try await scan.waitForLine(where: isEvent("completed", of: memberB))
            // 2. Three: the third is found and works.
            try view.set([a.insideAddress, b.insideAddress, c.insideAddress], for: Self.name)
            try await scan.waitForLine(timeout: .seconds(15), where: isEvent("discovered", of: memberC))
            try await scan.waitForLine(where: isEvent("completed", of: memberC))
            // 3. b leaves: drained, its running tasks complete, then its link closes.
            try view.set([a.insideAddress, c.insideAddress], for: Self.name)
            try await scan.waitForLine(timeout: .seconds(15), where: isEvent("draining", of: memberB))
            try await scan.waitForLine(where: isEvent("disconnected", of: memberB))

            let run = try await scan.finish(timeout: .seconds(90))
            #expect(run.status == 0, "\(run.stderr)")
            let all = events(run.lines)
            let summary = all.last { $0["event"] as? String == "summary" }
            #expect(summary?["completed"] as? Int == 60, "\(run.stdout)")
            #expect(summary?["gave_up"] as? Int == 0)
            #expect(summary?["reruns"] as? Int == 0)
            let drained = all.firstIndex { $0["event"] as? String == "draining" && $0["system"] as? String == memberB }
            let left = all.firstIndex { $0["event"] as? String == "disconnected" && $0["system"] as? String == memberB }
            #expect(drained != nil && left != nil && drained! < left!)
            // b's tasks that ran when it was drained completed on b, before its link closed.
            if let drained, let left, drained < left {
                #expect(all[drained..<left].contains { $0["event"] as? String == "completed" && $0["system"] as? String == memberB })
            }
            // Nothing of b's was cut short: no failed or retried task anywhere.
            #expect(!all.contains { ["failed", "retry"].contains($0["event"] as? String) })
            // The coordinator let go of b; b itself still runs.
            #expect(kill(nodes[1].pid, 0) == 0)

            let status = try await runProgram(launcher[0], Array(launcher.dropFirst()) + [
                skynetBinary.path, "status", "--cluster", clusterFile,
            ], limit: .seconds(30), environment: ["SKYNET_TOKEN": token])
            let rows = status.lines.filter { $0.hasPrefix("workers/") }
            #expect(rows.count == 2, "\(status.stdout)")  // a and c: b is no longer an address of the name
            #expect(rows.allSatisfy { $0.contains(" up ") })
            try view.set([a.insideAddress, b.insideAddress, c.insideAddress], for: Self.name)
            let all3 = try await runProgram(launcher[0], Array(launcher.dropFirst()) + [
                skynetBinary.path, "status", "--cluster", clusterFile,
            ], limit: .seconds(30), environment: ["SKYNET_TOKEN": token])
            #expect(Set(all3.lines.filter { $0.hasPrefix("workers/") }.compactMap { $0.split(separator: " ").first.map(String.init) })
                    == [memberA, memberB, memberC], "\(all3.stdout)")
            #expect(all3.status == 0)
        } } }
    }
}
