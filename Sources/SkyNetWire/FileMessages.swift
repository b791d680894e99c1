import SkyNetRuntime
import SkyNetWork

/// The most bytes one `data` line carries (256 KiB): its line stays near a third of the
/// 1 MiB line limit. Fixed by the protocol (docs/PROTOCOL.md, "Files").
package let maxChunkBytes = 262_144

/// A file's size, permission bits and modification time, as a `transfer`, `basefile` or
/// `return` announces it before its bytes.
package struct FileHeader: Sendable, Equatable {
    package var size: Int64
    /// 0…0o7777; a node keeps `mode & 0o755 | 0o400` (the x bits matter, setuid never travels).
    package var mode: Int
    /// Nanoseconds since the epoch (an integer: a JSON double cannot hold them).
    package var mtimeNanoseconds: Int64

    package init(size: Int64, mode: Int, mtimeNanoseconds: Int64) {
        self.size = size
        self.mode = mode
        self.mtimeNanoseconds = mtimeNanoseconds
    }

    func add(to json: inout JSONLine) {
        json.add("size", Int(size))
        json.add("mode", mode)
        json.add("mtime_ns", Int(mtimeNanoseconds))
    }
}

/// What a node's welcome offers for files (`"files":{"version":2,"max_file_size":…}`).
package struct FileSupport: Sendable, Equatable {
    /// The file protocol's version on this link: 1, each file's `end` carries its SHA-256,
    /// checked by the receiver; 2 (a link that guarantees integrity itself: encrypted, or ssh),
    /// no digest travels, and on framed links a chunk is a binary message (`FileFormat`).
    package var version: Int
    /// The largest file the node accepts (its `--max-file-size`).
    package var maxFileSize: Int64

    /// The versions our side speaks: a client asks for the highest in its hello (`files`); a
    /// node grants it only on a link that guarantees integrity, else 1.
    package static let versions = 1...2
    package static let currentVersion = versions.upperBound

    package init(version: Int = 1, maxFileSize: Int64) {
        self.version = version
        self.maxFileSize = maxFileSize
    }

    /// How files travel at this version over a connection that is (or is not) framed.
    package func format(framed: Bool) -> FileFormat {
        version >= 2 ? FileFormat(digests: false, binary: framed) : .checked
    }
}

/// How one link's files travel, from its `FileSupport`: whether each file's `end` carries its
/// SHA-256 for the receiver to check (version 1: a plain link, whose bytes nothing else
/// protects), and whether chunks go as binary messages (a framed link: no base64).
package struct FileFormat: Sendable, Equatable {
    package var digests: Bool
    package var binary: Bool

    package init(digests: Bool, binary: Bool) {
        self.digests = digests
        self.binary = binary
    }

    /// Version 1: base64 in JSON lines, a digest at each end.
    package static let checked = FileFormat(digests: true, binary: false)
}

/// `transfer`: run one task of a named job in a work directory of its own, with its input file
/// (`file`: its bytes follow as `data` lines and one `end`) and the files to return.
package struct TransferRequest: Sendable, Equatable {
    package var id: Int
    /// As in `job`; with `file`, `task.inputText` is the path the file is written at in the
    /// work directory.
    package var task: ScanTask
    package var file: FileHeader?
    /// Paths relative to the work directory, fetched after the command succeeded (0…64).
    package var returns: [String]
    package var maxReturnSize: Int64
    /// Whether the work directory is removed once the reply went out.
    package var cleanup: Bool

    /// The most `returns` one request may name.
    package static let maxReturns = 64

    package init(id: Int, task: ScanTask, file: FileHeader?, returns: [String], maxReturnSize: Int64, cleanup: Bool) {
        self.id = id
        self.task = task
        self.file = file
        self.returns = returns
        self.maxReturnSize = maxReturnSize
        self.cleanup = cleanup
    }

    /// The line to send.
    package var line: [UInt8] {
        var body = JSONLine()
        body.add("id", uuid: task.id)
        body.add("sector", task.input)
        body.add("input", task.inputText)
        if let timeout = task.timeout { body.add("timeout", timeout) }
        var json = JSONLine(type: "transfer", id: id)
        json.add("job", task.job)
        json.add("task", object: body)
        if let file {
            var header = JSONLine()
            file.add(to: &header)
            json.add("file", object: header)
        }
        json.add("returns", strings: returns)
        json.add("max_return_size", Int(maxReturnSize))
        json.add("cleanup", cleanup)
        return json.line
    }
}

/// `basefile`: one file stored for every later task of this connection; its bytes follow.
package struct BasefileRequest: Sendable, Equatable {
    package var id: Int
    /// Relative to every task's work directory.
    package var path: String
    package var file: FileHeader

    package init(id: Int, path: String, file: FileHeader) {
        self.id = id
        self.path = path
        self.file = file
    }

    /// The line to send.
    package var line: [UInt8] {
        var json = JSONLine(type: "basefile", id: id)
        json.add("path", path)
        file.add(to: &json)
        return json.line
    }
}

/// `data`: 1…`maxChunkBytes` bytes of a file at `offset` (the bytes received so far for it).
/// `file` is the index into a transfer's `returns` on a node's reply, nil on a request.
package struct FileChunk: Sendable, Equatable {
    package var id: Int
    package var file: Int?
    package var offset: Int64
    package var bytes: Data

    package init(id: Int, file: Int?, offset: Int64, bytes: Data) {
        self.id = id
        self.file = file
        self.offset = offset
        self.bytes = bytes
    }

    /// The `data` line for `bytes`, encoded straight from the buffer (a file pump's read).
    package static func line(id: Int, file: Int?, offset: Int64, bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var json = JSONLine(capacity: Base64.encodedCount(bytes.count) + 96)
        json.add("type", "data")
        json.add("id", id)
        if let file { json.add("file", file) }
        json.add("offset", Int(offset))
        json.add("data", base64: bytes)
        return json.takeLine()
    }

    /// The binary `data` message of a framed link (docs/PROTOCOL.md, "data and end"):
    /// `0x00 ‖ id (8 bytes) ‖ file (1 byte, 0xFF: none) ‖ offset (8 bytes) ‖ bytes`, integers
    /// big-endian, the id in two's complement (an id may be negative).
    package static func message(id: Int, file: Int?, offset: Int64, bytes: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: binaryHeaderCount + bytes.count) { message, initialized in
            let raw = UnsafeMutableRawBufferPointer(message)
            raw[0] = 0
            raw.storeBytes(of: UInt64(bitPattern: Int64(id)).bigEndian, toByteOffset: 1, as: UInt64.self)
            raw[9] = file.map { UInt8($0) } ?? 0xFF
            raw.storeBytes(of: UInt64(offset).bigEndian, toByteOffset: 10, as: UInt64.self)
            UnsafeMutableRawBufferPointer(rebasing: raw[binaryHeaderCount...]).copyMemory(from: bytes)
            initialized = raw.count
        }
    }

    /// Bytes of a binary `data` message before the chunk.
    package static let binaryHeaderCount = 18

    /// The message that carries `bytes` in `format`.
    package static func message(_ format: FileFormat, id: Int, file: Int?, offset: Int64, bytes: UnsafeRawBufferPointer) -> [UInt8] {
        format.binary ? message(id: id, file: file, offset: offset, bytes: bytes) : line(id: id, file: file, offset: offset, bytes: bytes)
    }

    /// The line to send.
    package var line: [UInt8] {
        bytes.withUnsafeBytes { Self.line(id: id, file: file, offset: offset, bytes: $0) }
    }
}

/// `end`: after exactly the file's size in bytes; with its SHA-256 on a link of files
/// version 1, without on version 2 (the link's own integrity covers the bytes).
package struct FileEnd: Sendable, Equatable {
    package var id: Int
    package var file: Int?
    package var sha256: [UInt8]?

    package init(id: Int, file: Int?, sha256: [UInt8]?) {
        self.id = id
        self.file = file
        self.sha256 = sha256
    }

    /// The line to send.
    package var line: [UInt8] {
        var json = JSONLine(type: "end", id: id)
        if let file { json.add("file", file) }
        if let sha256 { json.add("sha256", Secrets.hex(sha256)) }
        return json.line
    }
}

/// `return`: a node is about to send `returns[file]` of transfer `id`. No path travels from a
/// node to a coordinator: only the index.
package struct ReturnHeader: Sendable, Equatable {
    package var id: Int
    package var file: Int
    package var header: FileHeader

    package init(id: Int, file: Int, header: FileHeader) {
        self.id = id
        self.file = file
        self.header = header
    }

    /// The line to send.
    package var line: [UInt8] {
        var json = JSONLine(type: "return", id: id)
        json.add("file", file)
        header.add(to: &json)
        return json.line
    }
}

extension JSONLine {
    /// A string of base64, encoded straight into the line.
    mutating func add(_ key: String, base64 bytes: UnsafeRawBufferPointer) {
        add(key, rawString: { Base64.encode(bytes, appendingTo: &$0) })
    }
}
