import SkyNetRuntime
import SkyNetWork

/// The lines that make up nearly all traffic, `scan` requests and `result` replies (and the
/// calls of actors and their answers), decoded without the general JSON parser when they are
/// written exactly as our own encoder writes them (the parser's dictionary of values was the largest user-space cost of a
/// node's request and of a coordinator's reply).
///
/// Safe by construction: a `scan` or `result` line is taken here only if encoding the decoded
/// message again would give back the very same bytes. Each field is read only in the form our
/// encoder writes it (an integer without `-0`, a lower-case UUID, a string that needs no
/// escape, a number as `Double`'s description), in the encoder's order, so that holds without
/// encoding the line a second time. Such a line is one the general decoder reads the same way
/// (our lines round-trip), so the fast path changes no answer; any other line (other field
/// order, spaces, escapes, a number written another way) returns nil and goes the long way.
/// (The chunk's and the actors' paths argue their safety where they are.)
enum CanonicalLine {
    /// `{"type":"result","id":N,"task":"UUID","result":"TEXT"}` with TEXT needing no escape.
    static func result(_ line: Data) -> Reply? {
        exact(line) { reader -> Reply? in
            guard reader.literal(#"{"type":"result","id":"#), let id = reader.canonicalInteger(),
                  reader.literal(#","task":"#), let task = reader.wireUUID(),
                  reader.literal(#","result":"#), let result = reader.plainString(),
                  reader.literal("}"), reader.atEnd
            else { return nil }
            return Reply.result(id: id, task: task, result: result)
        }
    }

    /// `{"type":"scan","id":N,"task":{"id":"UUID","input":N,"duration":D}}`, with or without
    /// a `"timeout":T` after the duration and a `"wait":W` after the task, each a number the
    /// protocol accepts.
    static func scan(_ line: Data) -> Request? {
        exact(line) { reader -> Request? in
            guard reader.literal(#"{"type":"scan","id":"#), let id = reader.canonicalInteger(),
                  reader.literal(#","task":{"id":"#), let taskID = reader.wireUUID(),
                  reader.literal(#","input":"#), let input = reader.canonicalInteger(),
                  reader.literal(#","duration":"#), let duration = reader.canonicalNumber(),
                  ScanTask.isValidDuration(duration)
            else { return nil }
            var timeout: Double?
            if reader.literal(#","timeout":"#) {
                guard let value = reader.canonicalNumber(), ScanTask.isValidTimeout(value) else { return nil }
                timeout = value
            }
            guard reader.literal("}") else { return nil }
            var wait: Double?
            if reader.literal(#","wait":"#) {
                guard let value = reader.canonicalNumber(), ScanTask.isValidTimeout(value) else { return nil }
                wait = value
            }
            guard reader.literal("}"), reader.atEnd else { return nil }
            return Request.scan(id: id, task: ScanTask(id: taskID, input: input, duration: duration, timeout: timeout), wait: wait)
        }
    }

    static func exact<T>(_ line: Data, _ read: (inout ExactLineReader) -> T?) -> T? {
        line.withUnsafeBytes { raw in
            raw.withMemoryRebound(to: UInt8.self) { bytes in
                var reader = ExactLineReader(bytes: bytes)
                return read(&reader)
            }
        }
    }
}
