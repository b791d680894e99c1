import Foundation
@testable import SkyNet
@testable import SkyNetCluster
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

extension ProcessTests.DrainProcessTests {
    /// Whether a node can be started as PID 1 of a new PID namespace here (root, unshare).
    static var canRunAsPID1: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") }

    /// A container's PID 1 gets no signal it has no handler for: the node's handlers must make
    /// SIGTERM drain it there too (Kubernetes without `shareProcessNamespace`, `docker run`).
    @Test(.enabled(if: canRunAsPID1, "needs root and /usr/bin/unshare (apt-get install util-linux)"))
    func asPID1OfItsNamespaceSIGTERMStillDrains() async throws {
        var options = ChildProcess.Options(
            arguments: ["--pid", "--fork", "--mount-proc", skynetBinary.path, "node", "--port", "0", "--name", "beta",
                        "--job", "nap=sleep 1", "--drain-timeout", "10"],
            environment: ProcessInfo.processInfo.environment)
        options.stdout = .lines(keep: 100)
        options.stderr = .lines(keep: 100)
        let spawnOptions = options
        let unshare = try await onOwnThread(named: "test-spawn") { try ChildProcess.spawn("/usr/bin/unshare", spawnOptions) }
        defer { unshare.send(SIGKILL) }  // unshare --fork passes it on; the namespace dies with its PID 1
        let listening = try await unshare.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("listening on ") }
        let (host, port) = try #require(parseListening(listening))
        let node = try #require(HostProcesses.descendants(of: unshare.pid).first { $0.name == "skynet" })

        let socket = try await Self.rawClient(asking: "nap", input: "0", of: host, port)
        defer { socket.close() }
        let pid = node.pid
        try await withTimeout(.seconds(20)) {
            while !HostProcesses.descendants(of: pid).contains(where: { $0.name == "sleep" }) {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        kill(node.pid, SIGTERM)
        // welcome, draining, then the task's result (it finishes within the drain timeout).
        let lines = try await onOwnThread(named: "test-raw") { receiveLines(from: socket, count: 3, silence: .seconds(15)) }
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.dropFirst().first?.contains(#""type":"draining""#) == true, "\(lines)")
        #expect(lines.last?.contains(#""type":"result""#) == true, "\(lines)")
        let ended = try await withTimeout(.seconds(20)) { await unshare.exit.value }
        #expect(ended.status == 0, "\(unshare.stderrLines?.lines ?? [])")
        #expect(unshare.stderrLines?.lines.contains { $0.hasPrefix("[Node] Draining (signal 15): up to 10 s for 1 running task") } == true)
    }
}
