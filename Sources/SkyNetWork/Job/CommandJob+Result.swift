import SkyNetRuntime

/// How a command's end and its outputs become the task's result or its failure.
extension CommandJob {
    /// The result text of a command that ended as `ended` having written `output`, or the
    /// `task-failed` failure that names what went wrong.
    static func result(of ended: ChildExit, output: CapturedOutput, maxOutput: Int) throws(ScanFailure) -> String {
        var stdout = output.stdout ?? CapturedBytes()
        if stdout.bytes.last == UInt8(ascii: "\n") { stdout.bytes.removeLast() }
        // Checked first: the overflow is why the command was killed.
        if stdout.overflowed || stdout.bytes.count > maxOutput {
            throw .outputOver(maxOutput)
        }
        guard ended.succeeded else {
            let line = lastLine(of: output.stderr?.bytes ?? [])
            throw failure(line.isEmpty ? ended.description : "\(ended.description): \(line)")
        }
        if output.abandoned {
            throw failure("its output was still held open by a process outside its group after it ended")
        }
        // Fail rather than replace invalid bytes: a result is data (a digest, a path) that
        // must never differ silently from what the command wrote.
        guard let text = String(validating: stdout.bytes, as: UTF8.self) else {
            let offset = firstInvalidOffset(in: stdout.bytes)
            throw failure("output is not UTF-8 text (invalid byte at offset \(offset)); encode binary output, e.g. with base64")
        }
        return text
    }

    private static func failure(_ message: String) -> ScanFailure {
        ScanFailure(code: .taskFailed, message: message)
    }

    /// The last non-empty line of a stderr tail, trimmed, at most 200 characters, decoded
    /// leniently (it is only a message).
    static func lastLine(of bytes: [UInt8]) -> String {
        let lines = bytes.split(separator: UInt8(ascii: "\n"))
        for line in lines.reversed() {
            let text = String(decoding: line, as: UTF8.self).trimming(\.isWhitespace)
            if !text.isEmpty { return text.count > 200 ? String(text.prefix(200)) + "…" : text }
        }
        return ""
    }

    private static func firstInvalidOffset(in bytes: [UInt8]) -> Int {
        var offset = 0
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput, .error: return offset
            }
        }
    }
}
