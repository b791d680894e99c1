import SkyNetRuntime
import SkyNetWork

/// The lines that make up nearly all traffic, `scan` requests and `result` replies (and the
/// calls of actors and their answers), decoded without the general JSON parser when they are
/// written exactly as our own encoder writes them (the parser's dictionary of values was the largest user-space cost of a
/// node's request and of a coordinator's reply).
///
/// Safe by construction: a `scan` or `result` line is taken here only if encoding the decoded
/// message again gives back the very same bytes. Such a line is one the general decoder reads
/// the same way (our lines round-trip), so the fast path changes no answer; any other line
/// (other field order, spaces, escapes, a number written another way) returns nil and goes
/// the long way. (The chunk's and the actors' paths argue their safety where they are.)
enum CanonicalLine {
    /// `{"type":"result","id":N,"task":"UUID","result":"TEXT"}` with TEXT needing no escape.
    static func result(_ line: Data) -> Reply? {
        exact(line) { reader, bytes -> Reply? in
            guard reader.literal(#"{"type":"result","id":"#), let id = reader.integer(),
                  reader.literal(#","task":"#), let task = reader.plainString().flatMap(UUID.init(wireText:)),
                  reader.literal(#","result":"#), let result = reader.plainString(),
                  reader.literal("}"), reader.atEnd
            else { return nil }
            let reply = Reply.result(id: id, task: task, result: result)
            return writes(reply.line, as: bytes) ? reply : nil
        }
    }

    /// `{"type":"scan","id":N,"task":{"id":"UUID","input":N,"duration":D}}`, with or without
    /// a `"timeout":T` after the duration and a `"wait":W` after the task, each a number the
    /// protocol accepts.
    static func scan(_ line: Data) -> Request? {
        exact(line) { reader, bytes -> Request? in
            guard reader.literal(#"{"type":"scan","id":"#), let id = reader.integer(),
                  reader.literal(#","task":{"id":"#), let taskID = reader.plainString().flatMap(UUID.init(wireText:)),
                  reader.literal(#","input":"#), let input = reader.integer(),
                  reader.literal(#","duration":"#), let duration = reader.number(),
                  ScanTask.isValidDuration(duration)
            else { return nil }
            var timeout: Double?
            if reader.literal(#","timeout":"#) {
                guard let value = reader.number(), ScanTask.isValidTimeout(value) else { return nil }
                timeout = value
            }
            guard reader.literal("}") else { return nil }
            var wait: Double?
            if reader.literal(#","wait":"#) {
                guard let value = reader.number(), ScanTask.isValidTimeout(value) else { return nil }
                wait = value
            }
            guard reader.literal("}"), reader.atEnd else { return nil }
            let request = Request.scan(id: id, task: ScanTask(id: taskID, input: input, duration: duration, timeout: timeout), wait: wait)
            return writes(request.line, as: bytes) ? request : nil
        }
    }

    /// Whether `line`, as our encoder writes it (with its newline), is `bytes` and a newline.
    static func writes(_ line: [UInt8], as bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        line.count == bytes.count + 1 && line.withUnsafeBufferPointer { UnsafeBufferPointer(rebasing: $0.dropLast()).elementsEqual(bytes) }
    }

    static func exact<T>(_ line: Data, _ read: (inout ExactLineReader, UnsafeBufferPointer<UInt8>) -> T?) -> T? {
        line.withUnsafeBytes { raw in
            raw.withMemoryRebound(to: UInt8.self) { bytes in
                var reader = ExactLineReader(bytes: bytes)
                return read(&reader, bytes)
            }
        }
    }
}
