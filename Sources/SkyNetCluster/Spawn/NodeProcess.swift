import SkyNetRuntime

/// A `skynet node` child process, started on a free port and awaited until it is ready.
///
/// Its life is tied to ours: it gets `--exit-with-parent` and the read end of a pipe as its
/// stdin, whose write end only this process holds (close-on-exec, so no other child has it).
/// When this process ends, however it ends, the node reads EOF and stops within a second.
package final class NodeProcess: Sendable {
    /// A node that exited or said nothing usable before it was ready.
    package struct StartFailure: Error, CustomStringConvertible {
        package let description: String
    }

    /// The hidden `skynet node` flag that makes a node exit when its stdin reaches EOF.
    package static let exitWithParentFlag = "--exit-with-parent"

    package let name: String
    package let host: String
    package let port: Int
    package var processIdentifier: Int32 { child.pid }
    /// The exit status (or the number of the signal that ended it), once it has exited.
    package let exitStatus: AsyncSignal<Int32>
    /// The child process itself (exit reason, peak memory).
    package let child: ChildProcess

    /// Starts `executable node --port 0 --name NAME EXTRA…` and waits (up to `timeout`) for
    /// its `listening on HOST:PORT` line. The node's stderr goes to `stderr` (default: nowhere).
    /// `portOverride` asks for a given port instead of a free one; `environment` replaces ours.
    package static func start(
        executable: URL, name: String, arguments: [String] = [], stderr: ChildProcess.Output = .null,
        environment: [String: String]? = nil, portOverride: Int = 0, timeout: Duration = .seconds(10)
    ) async throws -> NodeProcess {
        var options = ChildProcess.Options(arguments: commandLine(name: name, port: portOverride, arguments: arguments),
                                           environment: environment)
        options.stdin = .pipe
        options.stdout = .lines(maxLength: 4096, keep: 16)
        options.stderr = stderr
        let spawnOptions = options
        // posix_spawn holds its caller until the child has exec'd: not on the cooperative pool.
        let child = try await onBlockingPool { try ChildProcess.spawn(executable.path, spawnOptions) }
        let exitStatus = AsyncSignal<Int32>()
        Task { exitStatus.fulfil(await child.exit.value.status) }
        do {
            let line = try await child.waitForLine(timeout: timeout) { _ in true }
            guard let (host, port) = parseListening(line) else {
                throw StartFailure(description: "node \(name) said \"\(line)\" instead of `listening on HOST:PORT`")
            }
            return NodeProcess(name: name, host: host, port: port, child: child, exitStatus: exitStatus)
        } catch {
            child.send(SIGKILL)
            let ended = await child.exit.value
            if error is TimeoutError {
                throw StartFailure(description: "node \(name) was not ready within \(timeout)")
            }
            if error is ChildProcessError {
                throw StartFailure(description: "node \(name) exited before it was ready (\(ended))")
            }
            throw error
        }
    }

    /// The name of the `index`-th node a process spawns (from 1): `node1`, `node2` …
    package static func spawnedName(_ index: Int) -> String { "node\(index)" }

    /// Starts `count` nodes of this executable (`node1` …) in parallel, each with `arguments`,
    /// and returns them in order; if one fails, stops the others and throws its error. Every
    /// start is awaited, failed or not, so that no node that came up late is left running.
    package static func startAll(_ count: Int, arguments: [String]) async throws -> [NodeProcess] {
        guard count > 0 else { return [] }
        let executable = URL(fileURLWithPath: runningExecutablePath())
        let started = await withTaskGroup(of: Result<NodeProcess, any Error>.self) { group in
            for index in 1...count {
                group.addTask {
                    do {
                        return .success(try await start(executable: executable, name: spawnedName(index), arguments: arguments))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let nodes = started.compactMap { try? $0.get() }
        for case .failure(let error) in started {
            for node in nodes { await node.stop() }
            throw error
        }
        // node1 … node10: the shorter name first is the numeric order.
        return nodes.sorted { ($0.name.count, $0.name) < ($1.name.count, $1.name) }
    }

    /// The arguments `start` gives the executable: `node --port PORT --name NAME --exit-with-parent EXTRA…`.
    package static func commandLine(name: String, port: Int = 0, arguments: [String]) -> [String] {
        ["node", "--port", String(port), "--name", name, exitWithParentFlag] + arguments
    }

    private init(name: String, host: String, port: Int, child: ChildProcess, exitStatus: AsyncSignal<Int32>) {
        self.name = name
        self.host = host
        self.port = port
        self.child = child
        self.exitStatus = exitStatus
    }

    /// Sends `signal` to the node (SIGKILL, SIGSTOP, SIGCONT, …), unless it has been reaped.
    package func send(_ signal: Int32) {
        child.send(signal)
    }

    /// Asks the node to stop (SIGTERM) and waits up to `grace`, then kills it.
    package func stop(grace: Duration = .seconds(5)) async {
        await child.stop(grace: grace)
        _ = await exitStatus.value
    }
}

/// `listening on HOST:PORT` → (HOST, PORT).
func parseListening(_ line: String) -> (String, Int)? {
    let prefix = "listening on "
    guard line.hasPrefix(prefix) else { return nil }
    let address = line.dropFirst(prefix.count)
    guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else { return nil }
    var host = String(address[..<colon])
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    return (host, port)
}
