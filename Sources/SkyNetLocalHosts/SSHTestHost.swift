import Foundation
import SkyNet
import SkyNetRuntime

/// A real OpenSSH server for tests: `/usr/sbin/sshd` on a loopback port (or in a network
/// namespace), with a throwaway host key, a config of its own and a folder holding all of it.
///
/// Every login's environment carries `SKYNET_TEST_HOST=<marker>` (sshd_config `SetEnv`), and
/// so does every process a session starts (a node, its jobs): `processes()` finds them all,
/// even once reparented to init. `stop()` must be called on every path (`withSSHTestHosts`
/// does): it kills sshd, every session and every marked process, then removes the folder.
package final class SSHTestHost: Sendable {
    /// How to set a host up.
    package struct Options: Sendable {
        /// The `skynet` executable linked as `bin/skynet`; nil: none.
        package var skynet: String?
        /// Whether `bin/` is on the sessions' PATH; false: a host where `skynet` is not found.
        package var skynetOnPath = true
        /// The address sshd listens on.
        package var address = "127.0.0.1"
        /// The port; nil: a free loopback port, another one if sshd finds it taken.
        package var port: Int?
        /// Words run before sshd's path, e.g. `ip netns exec NS` (they must exec sshd, so that
        /// the process started is sshd itself).
        package var launcher: [String] = []

        package init(skynet: String? = nil, skynetOnPath: Bool = true) {
            self.skynet = skynet
            self.skynetOnPath = skynetOnPath
        }
    }

    package static let sshdPath = "/usr/sbin/sshd"

    /// Why no host can be started here, or nil when one can.
    package static let unavailableReason: String? = {
        guard FileManager.default.isExecutableFile(atPath: sshdPath) else {
            return "\(sshdPath) is not installed (Debian: apt-get install openssh-server)"
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for tool in ["ssh", "ssh-keygen"] where !path.split(separator: ":").contains(where: {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)")
        }) {
            return "\(tool) is not on PATH (Debian: apt-get install openssh-client)"
        }
        return nil
    }()

    /// Whether a host can be started here (for `.enabled(if:)`).
    package static var isAvailable: Bool { unavailableReason == nil }

    /// The folder holding keys, config, `bin/` and `home/`.
    package let folder: String
    /// The value of `SKYNET_TEST_HOST` in this host's sessions.
    package let marker: String
    package let address: String
    package let port: Int
    /// The client whose key this host authorizes.
    package let client: SSHTestClient
    private let launcher: [String]
    private let sshd: Locked<ChildProcess?>
    private let stopped = Locked(false)

    /// The sessions' HOME (`--ship` writes below it).
    package var home: String { folder + "/home" }
    /// `SKYNET_TEST_HOST=<marker>`, as it appears in a marked process's environment.
    package var markerEntry: String { "SKYNET_TEST_HOST=\(marker)" }
    /// The login for `--ssh`: `127.0.0.1:PORT`.
    package var login: String { "\(address):\(port)" }
    /// sshd's log so far (its stderr, `-e`), for a failing test's message.
    package var sshdLog: [String] { sshd.withLock { $0 }?.stderrLines?.lines ?? [] }
    /// sshd's process id while it runs.
    package var sshdPID: Int32? { sshd.withLock { $0 }.flatMap { $0.exit.current == nil ? $0.pid : nil } }

    private init(folder: String, marker: String, address: String, port: Int, client: SSHTestClient,
                 launcher: [String], sshd: ChildProcess) {
        self.folder = folder
        self.marker = marker
        self.address = address
        self.port = port
        self.client = client
        self.launcher = launcher
        self.sshd = Locked(sshd)
    }

    /// Sets a host up and starts its sshd, returning once sshd says it is listening (within
    /// 10 s). `client`: whose key to authorize; nil: a client of its own, in the host's folder.
    package static func start(client: SSHTestClient? = nil, options: Options = Options()) async throws -> SSHTestHost {
        if let reason = unavailableReason { throw SSHTestHostError(description: reason) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-ssh-\(UUID().uuidString)").path
        try checkPlain(folder)
        do {
            let marker = UUID().uuidString
            try prepareFolder(folder, options: options)
            let client = if let client { client } else { try await SSHTestClient.make(in: folder + "/client") }
            try await makeKeys(in: folder, client: client)
            let penalties = await sshdTakesPerSourcePenalties()
            // sshd cannot report a port it chose: take a free one, and another if someone
            // else took it before sshd bound it.
            for attempt in 1...3 {
                let port = try options.port ?? freeLoopbackPort()
                let config = configuration(folder: folder, address: options.address, port: port, marker: marker,
                                           skynetOnPath: options.skynetOnPath, perSourcePenalties: penalties)
                try config.write(toFile: folder + "/sshd_config", atomically: true, encoding: .utf8)
                do {
                    let sshd = try await launch(folder: folder, launcher: options.launcher)
                    return SSHTestHost(folder: folder, marker: marker, address: options.address, port: port,
                                       client: client, launcher: options.launcher, sshd: sshd)
                } catch let error as SSHTestHostError where error.addressInUse && options.port == nil && attempt < 3 {
                    continue
                }
            }
            throw SSHTestHostError(description: "sshd found no free port in 3 tries")
        } catch {
            try? FileManager.default.removeItem(atPath: folder)
            throw error
        }
    }

    /// Starts sshd again on the same address and port after `killSSHD()`.
    package func restartSSHD() async throws {
        guard sshdPID == nil else { throw SSHTestHostError(description: "sshd is still running (pid \(sshdPID ?? 0))") }
        let fresh = try await Self.launch(folder: folder, launcher: launcher)
        sshd.withLock { $0 = fresh }
    }

    /// The live processes that carry this host's marker: sessions' shells, nodes, jobs.
    package func processes() -> [Int32] { HostProcesses.carrying(markerEntry) }

    /// `processes()` once it is empty, or what is left after `timeout` (a killed process takes
    /// a moment to leave /proc; nothing announces it, so this polls).
    package func processesLeft(within timeout: Duration) async -> [Int32] {
        let deadline = ContinuousClock.now + timeout
        var left = processes()
        while !left.isEmpty, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
            left = processes()
        }
        return left
    }

    /// Kills (SIGKILL) sshd and every descendant named `sshd` (each connection's sshd calls
    /// setsid, so only walking parents finds them); the sessions' other processes stay and see
    /// their channel end. Waits (at most 5 s) until the listener has been reaped and the
    /// others are dead.
    package func killSSHD() async {
        // A reaped listener's pid may be someone else's now: walk only a live one's tree.
        guard let listener = sshd.withLock({ $0 }), listener.exit.current == nil else { return }
        listener.send(SIGSTOP)  // no new connection is forked while the tree is listed
        let killed = HostProcesses.freezeAndKill {
            HostProcesses.descendants(of: listener.pid).filter { $0.name == "sshd" }.map(\.pid)
        }
        listener.send(SIGKILL)
        _ = try? await withTimeout(.seconds(5)) { await listener.exit.value }
        await HostProcesses.awaitGone(killed, within: .seconds(5))
    }

    /// Kills sshd, everything it started and every marked process, waits (at most 5 s) until
    /// none is left, and removes the folder. Safe to call twice.
    ///
    /// One reading of /proc can miss a process (its environment reads empty mid-exec, a job
    /// just forked): the sweep also kills by the sessions and groups of what it found (each
    /// connection's sshd and each session's shell call setsid, and their jobs keep the ids
    /// once reparented) and ends only after two sweeps in a row find nothing new.
    package func stop() async {
        guard stopped.withLock({ state in defer { state = true }; return !state }) else { return }
        // After `killSSHD()` the listener is reaped and its pid may be someone else's.
        let listener = sshd.withLock { $0 }.flatMap { $0.exit.current == nil ? $0 : nil }
        listener?.send(SIGSTOP)
        let marker = markerEntry
        // The listener shares this process's session and group: those are never swept.
        var spare: Set<Int32> = [getsid(0), getpgrp()]
        if let listener, let own = HostProcesses.read(listener.pid) { spare.formUnion([own.session, own.group]) }
        await HostProcesses.sweep({ processes in
            (listener.map { HostProcesses.descendants(of: $0.pid, in: processes).map(\.pid) } ?? [])
                + HostProcesses.carrying(marker, in: processes)
        }, sparing: spare, within: .seconds(5))
        if let listener { await listener.stop(grace: .zero) }
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// Why a test host could not be set up or started.
package struct SSHTestHostError: Error, CustomStringConvertible, Sendable {
    package let description: String
    /// sshd could not bind its address: another port may do.
    package var addressInUse = false
}

/// Starts `count` hosts of the same kind that authorize one client (made in a folder of its
/// own), runs `body`, and stops every host and removes every folder on every path.
package func withSSHTestHosts<T: Sendable>(
    count: Int, options: SSHTestHost.Options = SSHTestHost.Options(),
    _ body: ([SSHTestHost], SSHTestClient) async throws -> T
) async throws -> T {
    try await withSSHTestHosts(each: Array(repeating: options, count: count), body)
}
