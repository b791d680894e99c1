import Foundation
import SkyNet
import SkyNetRuntime
import SkyNetTransport

/// W14's floor over TCP: files moved through loopback connections with nothing of SkyNet on
/// the path but the socket and file calls. Per lane one connection, a sender thread that
/// `pread`s 256 KiB at a time and sends it, and a receiver thread that `recv`s and writes at
/// the file's offset; each file goes as an 8-byte size, then its bytes (no name, no digest,
/// no framing beyond that: the receiver knows the order). All lanes run at once.
enum RawPipe {
    /// One connection's work: `sources[i]` arrives as `destinations[i]` (created, not replaced).
    struct Lane: Sendable {
        let sources: [String]
        let destinations: [String]
    }

    static let chunkBytes = 256 << 10

    /// Moves every lane's files at once; returns the wall time from the first connect to the
    /// last file closed, in seconds. Every thread it starts has ended when it returns.
    static func move(_ lanes: [Lane]) throws -> Double {
        let listener = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        let port = try listener.localAddress().port
        // Ends of lanes still running, and the first failure.
        let state = Guarded<(running: Int, failure: String?)>((2 * lanes.count, nil))
        @Sendable func finish(_ failure: String?) {
            state.withLock { state in
                state.running -= 1
                if state.failure == nil { state.failure = failure }
            }
        }
        let started = ContinuousClock.now
        for (index, lane) in lanes.enumerated() {
            let sender: Socket, receiver: Socket
            do {
                sender = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))
                receiver = try listener.accept().socket
            } catch {
                // The lanes already started run to their end; none of them waits on this one.
                state.withLock { $0.running -= 2 * (lanes.count - index) }
                state.wait(while: { $0.running > 0 }, then: { _, _ in })
                throw error
            }
            startThread(named: "bench-raw-send-\(index)") {
                defer { sender.close() }
                do { try send(lane.sources, over: sender); finish(nil) } catch { finish("send \(index): \(error)") }
            }
            startThread(named: "bench-raw-receive-\(index)") {
                defer { receiver.close() }
                do { try receive(lane.destinations, over: receiver); finish(nil) } catch { finish("receive \(index): \(error)") }
            }
        }
        let failure = state.wait(while: { $0.running > 0 }, then: { state, _ in state.failure })
        let seconds = (ContinuousClock.now - started).seconds
        if let failure { throw BenchError("raw pipe: \(failure)") }
        return seconds
    }

    /// The sender's loop: each file's size, then its bytes in chunks.
    private static func send(_ paths: [String], over socket: Socket) throws {
        var buffer = [UInt8](repeating: 0, count: chunkBytes)
        for path in paths {
            let file = try openForReading(path)
            defer { file.close() }
            let size = try file.status().size
            var header = UInt64(size).littleEndian
            try withUnsafeBytes(of: &header) { try sendAll($0, over: socket) }
            var offset: Int64 = 0
            while offset < size {
                let count = try buffer.withUnsafeMutableBytes { try file.read(into: $0, at: offset) }
                guard count > 0 else { throw BenchError("\(path) ended at \(offset) of \(size) bytes") }
                try buffer.withUnsafeBytes { try sendAll(UnsafeRawBufferPointer(rebasing: $0[..<count]), over: socket) }
                offset += Int64(count)
            }
        }
        socket.shutdown(reading: false, writing: true)
    }

    /// The receiver's loop: each file's size, then that many bytes written at their offsets.
    private static func receive(_ paths: [String], over socket: Socket) throws {
        var buffer = [UInt8](repeating: 0, count: chunkBytes)
        for path in paths {
            var header: UInt64 = 0
            try withUnsafeMutableBytes(of: &header) { try receiveAll($0, over: socket) }
            let size = Int64(UInt64(littleEndian: header))
            let url = URL(fileURLWithPath: path)
            let file = try DirectoryHandle.open(url.deletingLastPathComponent().path).createFile(url.lastPathComponent)
            defer { file.close() }
            var offset: Int64 = 0
            while offset < size {
                let wanted = Int(min(Int64(chunkBytes), size - offset))
                let count = try buffer.withUnsafeMutableBytes { try socket.receive(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<wanted])) }
                guard count > 0 else { throw BenchError("the connection closed at \(offset) of \(size) bytes of \(path)") }
                try buffer.withUnsafeBytes { try file.write(UnsafeRawBufferPointer(rebasing: $0[..<count]), at: offset) }
                offset += Int64(count)
            }
        }
    }

    private static func openForReading(_ path: String) throws -> OpenFile {
        let url = URL(fileURLWithPath: path)
        return try DirectoryHandle.open(url.deletingLastPathComponent().path).openFile(url.lastPathComponent)
    }

    private static func sendAll(_ bytes: UnsafeRawBufferPointer, over socket: Socket) throws {
        var sent = 0
        while sent < bytes.count {
            sent += try socket.send(UnsafeRawBufferPointer(rebasing: bytes[sent...]), wait: true)
        }
    }

    private static func receiveAll(_ bytes: UnsafeMutableRawBufferPointer, over socket: Socket) throws {
        var received = 0
        while received < bytes.count {
            let count = try socket.receive(into: UnsafeMutableRawBufferPointer(rebasing: bytes[received...]))
            guard count > 0 else { throw BenchError("the connection closed inside a file's header") }
            received += count
        }
    }
}
