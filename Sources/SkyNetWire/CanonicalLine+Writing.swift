import SkyNetRuntime
import SkyNetWork

extension CanonicalLine {
    /// The line of a `scan` request, written straight into one buffer: the very bytes the
    /// general encoder (`JSONLine`) writes, in the form `scan(_:)` reads. The coordinator
    /// writes one for every task, so the keys are written as they stand, not escaped each time.
    static func line(scan id: Int, task: ScanTask, wait: Double?) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(JSONLine.usualSize)
        append(#"{"type":"scan","id":"#, to: &line)
        JSONLine.appendInteger(id, to: &line)
        append(#","task":{"id":""#, to: &line)
        task.id.appendWireText(to: &line)
        append(#"","input":"#, to: &line)
        JSONLine.appendInteger(task.input, to: &line)
        append(#","duration":"#, to: &line)
        JSONLine.appendNumber(task.duration, to: &line)
        if let timeout = task.timeout {
            append(#","timeout":"#, to: &line)
            JSONLine.appendNumber(timeout, to: &line)
        }
        line.append(UInt8(ascii: "}"))
        if let wait {
            append(#","wait":"#, to: &line)
            JSONLine.appendNumber(wait, to: &line)
        }
        append("}\n", to: &line)
        return line
    }

    /// The line of a `result` reply, as `line(scan:task:wait:)` writes a request (a node
    /// writes one for every task); the result is escaped as any string is.
    static func line(result id: Int, task: UUID, result: String) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(JSONLine.usualSize + result.utf8.count)
        append(#"{"type":"result","id":"#, to: &line)
        JSONLine.appendInteger(id, to: &line)
        append(#","task":""#, to: &line)
        task.appendWireText(to: &line)
        append(#"","result":"#, to: &line)
        JSONLine.appendString(result, to: &line)
        append("}\n", to: &line)
        return line
    }

    private static func append(_ text: StaticString, to line: inout [UInt8]) {
        line.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
