import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

extension ProcessTests {
    /// A real node under a stand-in for systemd: a datagram socket the test binds as
    /// `NOTIFY_SOCKET` receives `READY=1` with a status, `WATCHDOG=1` every half
    /// `WATCHDOG_USEC`, and `STOPPING=1` on SIGTERM; the node's jobs never see the socket.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct NodeNotifyProcessTests {
        /// A job that says whether it inherited the notify socket.
        static let probe = "probe=sh -c 'echo ${NOTIFY_SOCKET-none} ${WATCHDOG_USEC-none} ${WATCHDOG_PID-none}'"

        private func notifiesTheServiceManager(abstract: Bool) async throws {
            let socket = try NotifySocket(abstract: abstract)
            let started = ContinuousClock.now
            // `WATCHDOG_PID=$$` then `exec`: the variable names the node's own pid, as systemd sets it.
            let node = try RunningProcess(
                ["-c", #"WATCHDOG_PID=$$ exec "$0" "$@""#, skynetBinary.path, "node", "--port", "0", "--job", Self.probe],
                environment: ["NOTIFY_SOCKET": socket.address, "WATCHDOG_USEC": "200000"], program: "/bin/sh")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-notify-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            do {
                let listening = try await node.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("listening on ") }
                let port = try #require(listening.split(separator: ":").last.flatMap { Int($0) })
                #expect(await socket.wait { $0 == "READY=1\nSTATUS=accepting: 0/4 running, 0 connections" }, "\(socket.datagrams)")
                #expect(await socket.wait(for: 3, timeout: .seconds(2)) { $0 == "WATCHDOG=1" }, "\(socket.datagrams)")
                // Three are due 100, 200 and 300 ms after READY, which came after the start.
                #expect(ContinuousClock.now - started >= .milliseconds(290))

                let cluster = folder.appendingPathComponent("cluster.json")
                try #"{"nodes":[{"name":"served","host":"127.0.0.1","port":\#(port)}]}"#.write(to: cluster, atomically: true, encoding: .utf8)
                let scan = try await runSkynet(["scan", "--cluster", cluster.path, "--job", "probe", "--local-capacity", "0",
                                                "--total", "1", "--results", "--quiet"],
                                               environment: ["NOTIFY_SOCKET": nil, "WATCHDOG_USEC": nil, "WATCHDOG_PID": nil])
                #expect(scan.status == 0, "\(scan.stderr)")
                #expect(scan.stdout == "none none none\n")

                #expect(!socket.datagrams.contains { $0.contains("STOPPING=1") })
                node.send(SIGTERM)
                #expect(await socket.wait { $0.hasPrefix("STOPPING=1\nSTATUS=draining: 0 running, timeout ") }, "\(socket.datagrams)")
                let finished = try await node.finish(timeout: .seconds(30))
                #expect(finished.status == 0, "\(finished.stderr)")
                #expect(socket.datagrams.last == "STATUS=stopped")
                #expect(socket.datagrams.filter { $0.hasPrefix("READY=1") }.count == 1)
            } catch {
                node.kill()
                await socket.close()
                try? FileManager.default.removeItem(at: folder)
                throw error
            }
            node.kill()
            await socket.close()
            try? FileManager.default.removeItem(at: folder)
        }

        @Test func aNodeNotifiesASocketAtAPath() async throws {
            try await notifiesTheServiceManager(abstract: false)
        }

        @Test func aNodeNotifiesAnAbstractSocket() async throws {
            try await notifiesTheServiceManager(abstract: true)
        }

        /// A node a scan spawned (`--exit-with-parent`) inherits the scan's environment but is
        /// not the service: it tells the service manager nothing.
        @Test func aNodeThatAScanSpawnedSendsNothing() async throws {
            let socket = try NotifySocket(abstract: true)
            let node: RunningProcess
            do {
                // Its stdin is /dev/null: the "parent" is gone at once, and the node stops.
                node = try RunningProcess(["node", "--port", "0", NodeProcess.exitWithParentFlag],
                                          environment: ["NOTIFY_SOCKET": socket.address, "WATCHDOG_USEC": "200000"])
            } catch {
                await socket.close()
                throw error
            }
            let finished = try? await node.finish(timeout: .seconds(20))
            node.kill()
            // A datagram of ours after the node's end: once it is read, so is all the node sent.
            let marker = ServiceNotifier.fromEnvironment(["NOTIFY_SOCKET": socket.address])
            #expect(marker?.notify(["MARKER=1"]) == true)
            #expect(await socket.wait { $0 == "MARKER=1" })
            await socket.close()
            #expect(finished?.status == 0)
            #expect(finished?.stdout.hasPrefix("listening on ") == true, "\(finished?.stderr ?? "")")
            #expect(socket.datagrams == ["MARKER=1"])
        }
    }
}
