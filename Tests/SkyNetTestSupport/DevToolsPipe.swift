import Foundation
import SkyNet
import SkyNetRuntime
import SkyNetWire

/// Why a DevTools call failed.
package struct DevToolsError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// The Chrome DevTools Protocol over `--remote-debugging-pipe`: JSON messages, each ended by
/// a NUL byte, written to the browser's fd 3 and read from its fd 4.
///
/// A reader thread of its own reads replies and hands each to the caller awaiting its id;
/// events (messages without an id) are not needed by the driver and are dropped. Writes run on
/// threads of their own too (a pipe write can wait), one at a time under `writer`'s lock so
/// two messages never interleave. Bounded: at most `maxPending` calls in flight, messages of
/// at most `maxMessageBytes` (a full-page PNG in base64 is a few MiB), every call has a timeout.
final class DevToolsPipe: Sendable {
    static let maxPending = 64
    static let maxMessageBytes = 64 << 20

    private enum State {
        case open(nextID: Int, pending: [Int: CheckedContinuation<JSONValue, any Error>])
        case closed(reason: String)
    }

    private let state = Locked(State.open(nextID: 1, pending: [:]))
    /// The write end (fd 3 in the browser); nil once closed. A write holds this lock throughout.
    private let writer: Locked<Int32?>
    /// Fulfilled when the reader thread has ended (the browser closed fd 4) and closed its end.
    let readerEnded = AsyncSignal<Void>()

    /// Takes ownership of both descriptors: `commands` is written, `replies` is read.
    init(commands: Int32, replies: Int32) {
        writer = Locked(commands)
        startThread(named: "skynet-devtools-reader") { [self] in readReplies(from: replies) }
    }

    /// Sends `method` with `params` (to the page `session`, if given) and returns its result;
    /// a protocol error, a closed pipe or no reply within `timeout` is a `DevToolsError`.
    func call(_ method: String, _ params: JSONValue = [:], session: String? = nil, timeout: Duration) async throws -> JSONValue {
        do {
            return try await withTimeout(timeout) { try await self.send(method, params, session: session) }
        } catch is TimeoutError {
            throw DevToolsError("\(method): no reply within \(timeout)")
        } catch let error as DevToolsError {
            throw DevToolsError("\(method): \(error)")
        }
    }

    private func send(_ method: String, _ params: JSONValue, session: String?) async throws -> JSONValue {
        let id = try state.withLock { state throws(DevToolsError) -> Int in
            guard case .open(let id, let pending) = state else { throw closedError(state) }
            guard pending.count < Self.maxPending else { throw DevToolsError("\(Self.maxPending) calls in flight already") }
            state = .open(nextID: id + 1, pending: pending)
            return id
        }
        var message: [String: JSONValue] = ["id": .number(Double(id)), "method": .string(method), "params": params]
        if let session { message["sessionId"] = .string(session) }
        let bytes = Array(JSONValue.object(message).description.utf8) + [0]
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let registered = state.withLock { state -> (any Error)? in
                    // Checked under the lock: `onCancel` takes it too, after marking the task.
                    if Task.isCancelled { return CancellationError() }
                    guard case .open(let next, var pending) = state else { return closedError(state) }
                    pending[id] = continuation
                    state = .open(nextID: next, pending: pending)
                    return nil
                }
                if let registered { return continuation.resume(throwing: registered) }
                startThread(named: "skynet-devtools-writer") { [self] in
                    if let failure = writeAll(bytes) { finish(id, .failure(DevToolsError(failure))) }
                }
            }
        } onCancel: {
            finish(id, .failure(CancellationError()))
        }
    }

    /// Resumes the caller awaiting `id`, if it still waits.
    private func finish(_ id: Int, _ result: Result<JSONValue, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<JSONValue, any Error>? in
            guard case .open(let next, var pending) = state, let continuation = pending.removeValue(forKey: id) else { return nil }
            state = .open(nextID: next, pending: pending)
            return continuation
        }
        continuation?.resume(with: result)
    }

    /// Fails every call in flight and refuses new ones; the first reason sticks.
    func fail(_ reason: String) {
        let pending = state.withLock { state -> [CheckedContinuation<JSONValue, any Error>] in
            guard case .open(_, let pending) = state else { return [] }
            state = .closed(reason: reason)
            return Array(pending.values)
        }
        for continuation in pending { continuation.resume(throwing: DevToolsError(reason)) }
    }

    /// Closes the write end (the browser reads EOF), on a thread of its own: a write in
    /// progress holds the lock until the browser reads or dies.
    func closeWriter() async {
        _ = try? await onOwnThread(named: "skynet-devtools-close") { [writer] in
            writer.withLock { fd in
                if let descriptor = fd { close(descriptor) }
                fd = nil
            }
        }
    }

    private func closedError(_ state: State) -> DevToolsError {
        if case .closed(let reason) = state { DevToolsError(reason) } else { DevToolsError("the DevTools pipe is closed") }
    }

    /// Writes all of `bytes` (on a thread of our own); returns why it could not.
    private func writeAll(_ bytes: [UInt8]) -> String? {
        writer.withLock { fd -> String? in
            guard let fd else { return "the DevTools pipe is closed" }
            var sent = 0
            while sent < bytes.count {
                let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + sent, $0.count - sent) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return "writing to the browser: \(String(cString: strerror(errno)))" }
                sent += count
            }
            return nil
        }
    }

    /// The reader thread: splits fd 4 at NUL bytes and delivers each reply by id.
    private func readReplies(from fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var message: [UInt8] = []
        var reason = "the browser closed the DevTools pipe"
        reading: while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            var start = 0
            while let end = buffer[start..<count].firstIndex(of: 0) {
                message.append(contentsOf: buffer[start..<end])
                deliver(message)
                message.removeAll(keepingCapacity: true)
                start = end + 1
            }
            message.append(contentsOf: buffer[start..<count])
            if message.count > Self.maxMessageBytes {
                reason = "the browser sent a message over \(Self.maxMessageBytes) bytes"
                break reading
            }
        }
        close(fd)
        fail(reason)
        readerEnded.fulfil(())
    }

    private func deliver(_ bytes: [UInt8]) {
        guard let reply = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)), let id = reply["id"]?.int else {
            return  // an event, or something we cannot read: nobody awaits it
        }
        if let error = reply["error"] {
            let text = error["message"]?.string ?? error.description
            finish(id, .failure(DevToolsError(text + (error["data"]?.string.map { ": \($0)" } ?? ""))))
        } else {
            finish(id, .success(reply["result"] ?? [:]))
        }
    }
}
