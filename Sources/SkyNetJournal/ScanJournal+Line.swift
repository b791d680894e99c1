import SkyNetRuntime
import SkyNetWire
import SkyNetWork

extension ScanJournal.Entry {
    /// Reads a line in exactly the form `ScanJournal.append` writes, without building a JSON
    /// tree: a long journal resumes several times faster. Any other form, valid or not (keys
    /// reordered, spaces, escapes, a torn line), gives nil, and the caller falls back to the
    /// full parser, which decides.
    init?(journalLine line: UnsafeBufferPointer<UInt8>) {
        var reader = ExactLineReader(bytes: line)
        guard reader.literal(#"{"input":"#), let input = reader.integer() else { return nil }
        var text: String?
        if reader.literal(#","text":"#) {
            guard let value = reader.plainString() else { return nil }
            text = value
        }
        var job: String?
        if reader.literal(#","job":"#) {
            guard let value = reader.plainString() else { return nil }
            job = value
        }
        var status = 0
        if reader.literal(#","status":"#) {
            guard let value = reader.integer() else { return nil }
            status = value
        }
        var result = "", error: String?
        if reader.literal(#","result":"#), let value = reader.plainString() {
            result = value
        } else if reader.literal(#","error":"#), let value = reader.plainString() {
            error = value
        } else {
            return nil
        }
        guard reader.literal(#","system":"#), let system = reader.plainString(),
              reader.literal(#","attempt":"#), let attempt = reader.integer(),
              reader.literal(#","seconds":"#), let seconds = reader.number()
        else { return nil }
        var files: [ReturnedFile] = []
        if reader.literal(#","files":"#) {
            guard let value = Self.returnedFiles(&reader) else { return nil }
            files = value
        }
        guard reader.literal("}"), reader.atEnd else { return nil }
        self.init(input: input, text: text, job: job, result: result, status: status, error: error,
                  system: system, attempt: attempt, seconds: seconds, files: files)
    }
}
