import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// The `files` of a journal entry: each file the sector returned, written after
/// `seconds` only when there are some, in the form `--json`'s `completed` events use:
/// `"files":[{"path":"photos/a.jpg.out","size":4194304,"sha256":"<64 lowercase hex>"}]`.
///
/// A line whose `files` is anything else (not an array, a path that cannot travel, a size
/// below 0, a digest that is not 64 lowercase hex digits, more than `TransferSpec.maxReturns`
/// files) is not an entry: like any damaged line it is skipped and counted, so its sector runs
/// again.
extension ScanJournal.Entry {
    /// The `files` value in exactly the form `ScanJournal.line(for:)` writes, the reader just
    /// past `"files":`; nil for any other form (the full parser then decides).
    static func returnedFiles(_ reader: inout ExactLineReader) -> [ReturnedFile]? {
        guard reader.literal("[") else { return nil }
        var files: [ReturnedFile] = []
        repeat {
            guard files.count < TransferSpec.maxReturns,
                  reader.literal(#"{"path":"#), let path = reader.plainString(),
                  reader.literal(#","size":"#), let size = reader.integer(),
                  reader.literal(#","sha256":"#), let hex = reader.plainString(),
                  reader.literal("}"),
                  let file = returnedFile(path: path, size: size, sha256: hex)
            else { return nil }
            files.append(file)
        } while reader.literal(",")
        guard reader.literal("]") else { return nil }
        return files
    }

    /// The `files` of a parsed line: empty when absent (or null), nil when it is not a valid
    /// list of returned files. Keys other than `path`, `size` and `sha256` are ignored.
    static func returnedFiles(_ value: JSONValue?) -> [ReturnedFile]? {
        switch value {
        case nil, .null?: return []
        case .array(let values)? where values.count <= TransferSpec.maxReturns:
            var files: [ReturnedFile] = []
            for value in values {
                guard case .object(let fields) = value, case .string(let path)? = fields["path"],
                      case .int(let size)? = fields["size"], case .string(let hex)? = fields["sha256"],
                      let file = returnedFile(path: path, size: size, sha256: hex)
                else { return nil }
                files.append(file)
            }
            return files
        default: return nil
        }
    }

    /// The `files` of a line the full parser reads: parsed again only when the line names
    /// `"files"` at all (the fallback reads lines whose results hold escapes: most have none).
    static func returnedFiles<Bytes: Collection<UInt8>>(inLine line: Bytes) -> [ReturnedFile]? {
        guard contains(line, Array(#""files""#.utf8)) else { return [] }
        guard case .object(let fields)? = try? JSONParser.parse(line) else { return nil }
        return returnedFiles(fields["files"])
    }

    /// A returned file as the journal may hold it: a path that can travel, a size of 0 or more,
    /// a SHA-256 in 64 lowercase hex digits (as written); nil otherwise.
    static func returnedFile(path: String, size: Int, sha256 hex: String) -> ReturnedFile? {
        guard size >= 0, (try? TransferPath(path)) != nil, hex.utf8.count == 64,
              hex.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }),
              let digest = Secrets.bytes(fromHex: hex)
        else { return nil }
        return ReturnedFile(path: path, size: Int64(size), sha256: digest)
    }

    private static func contains<Bytes: Collection<UInt8>>(_ line: Bytes, _ needle: [UInt8]) -> Bool {
        var matched = 0
        for byte in line {
            // A quote starts the needle and is elsewhere only its last byte: a mismatch restarts at
            // this byte or after it, never further back.
            matched = byte == needle[matched] ? matched + 1 : (byte == needle[0] ? 1 : 0)
            if matched == needle.count { return true }
        }
        return false
    }
}
