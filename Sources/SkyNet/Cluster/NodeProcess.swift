import Foundation

/// A `skynet node` child process, started on a free port and awaited until it is ready.
public final class NodeProcess: Sendable {
    /// A node that exited or said nothing usable before it was ready.
    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
    }

    public let name: String
    public let host: String
    public let port: Int
    public var processIdentifier: Int32 { process.processIdentifier }
    /// The exit status (or the number of the signal that ended it), once it has exited.
    public let exitStatus: AsyncSignal<Int32>
    // Process is used from one task at a time: started here, then only signalled.
    private let process: Process

    /// Starts `executable node --port 0 --name NAME EXTRA…` and waits (up to `timeout`) for
    /// its `listening on HOST:PORT` line. The node's stderr goes to `stderr` (default: nowhere).
    /// `portOverride` asks for a given port instead of a free one.
    public static func start(
        executable: URL, name: String, arguments: [String] = [], stderr: FileHandle? = nil,
        environment: [String: String]? = nil, portOverride: Int = 0, timeout: Duration = .seconds(10)
    ) async throws -> NodeProcess {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["node", "--port", String(portOverride), "--name", name] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = stderr ?? FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        if let environment { process.environment = environment }
        let exitStatus = AsyncSignal<Int32>()
        process.terminationHandler = { exitStatus.fulfil($0.terminationStatus) }
        try process.run()
        let reader = output.fileHandleForReading
        do {
            let line = try await withTimeout(timeout) {
                try await onOwnThread(named: "skynet-ready") { readLine(from: reader) }
            }
            guard let line, let (host, port) = parseListening(line) else {
                throw StartFailure(description: "node \(name) exited before it was ready" + (line.map { " (said: \($0))" } ?? ""))
            }
            return NodeProcess(name: name, host: host, port: port, process: process, exitStatus: exitStatus)
        } catch {
            process.terminate()
            kill(process.processIdentifier, SIGKILL)
            _ = await exitStatus.value
            if error is TimeoutError {
                throw StartFailure(description: "node \(name) was not ready within \(timeout)")
            }
            throw error
        }
    }

    private init(name: String, host: String, port: Int, process: Process, exitStatus: AsyncSignal<Int32>) {
        self.name = name
        self.host = host
        self.port = port
        self.process = process
        self.exitStatus = exitStatus
    }

    /// Sends `signal` to the node (SIGKILL, SIGSTOP, SIGCONT, …).
    public func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Asks the node to stop (SIGTERM) and waits up to `grace`, then kills it.
    public func stop(grace: Duration = .seconds(5)) async {
        guard exitStatus.current == nil else { return }
        send(SIGCONT)  // a stopped process cannot act on SIGTERM
        send(SIGTERM)
        let status = exitStatus
        if (try? await withTimeout(grace) { await status.value }) == nil {
            send(SIGKILL)
            _ = await exitStatus.value
        }
    }
}

/// Reads one line (blocking) from a pipe; nil when it closed first.
private func readLine(from handle: FileHandle) -> String? {
    var bytes: [UInt8] = []
    while bytes.count < 4096 {
        let chunk = handle.readData(ofLength: 1)
        guard let byte = chunk.first else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
        if byte == UInt8(ascii: "\n") { break }
        bytes.append(byte)
    }
    return String(decoding: bytes, as: UTF8.self)
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
