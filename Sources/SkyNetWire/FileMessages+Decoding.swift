import SkyNetRuntime
import SkyNetWork

/// Decoding and validating the file messages (docs/PROTOCOL.md, "Files"): every path a node
/// is given must be a safe relative path, every number in its range, every chunk strict
/// base64 of 1…`maxChunkBytes` bytes. Errors are `bad-request`, with the request's id.
extension WireFields {
    /// A `transfer` request.
    func transferRequest() throws(WireError) -> TransferRequest {
        let id = try requestID()
        let task = try transferTask(id: id)
        var file: FileHeader?
        if fields["file"] != nil, fields["file"] != .null {
            file = try object("file").fileHeader()
            try Self.safeRelativePath(task.inputText, field: "task.input", id: id)
        }
        let returns = try stringArray("returns", max: TransferRequest.maxReturns)
        for (index, path) in returns.enumerated() {
            try Self.safeRelativePath(path, field: "returns[\(index)]", id: id)
        }
        // By bytes: Swift's String equality merges `café` in NFC and NFD, two files on disk.
        guard Set(returns.map { Array($0.utf8) }).count == returns.count else { throw .badRequest("\"returns\" names a path twice", id: id) }
        let maxReturnSize = fields["max_return_size"] == nil ? 1 << 30 : try int("max_return_size", in: 0...Int.max)
        return TransferRequest(id: id, task: task, file: file, returns: returns, maxReturnSize: Int64(maxReturnSize),
                               cleanup: try optionalBool("cleanup") ?? false)
    }

    /// A `basefile` request.
    func basefileRequest() throws(WireError) -> BasefileRequest {
        let id = try requestID()
        let path = try string("path")
        try Self.safeRelativePath(path, field: "path", id: id)
        return BasefileRequest(id: id, path: path, file: try fileHeader())
    }

    /// A `data` line: `file` must be there on a reply (`inReply`) and absent on a request.
    func fileChunk(inReply: Bool) throws(WireError) -> FileChunk {
        let id = try requestID()
        let file = try fileIndex(inReply: inReply)
        let offset = try int("offset", in: 0...Int.max)
        guard case .string(let text) = fields["data"] else { throw .badRequest("missing string field \"data\"", id: id) }
        guard let bytes = Self.chunkBytes(Array(text.utf8)) else {
            throw .badRequest("\"data\" must be strict base64 of 1…\(maxChunkBytes) bytes", id: id)
        }
        return FileChunk(id: id, file: file, offset: Int64(offset), bytes: bytes)
    }

    /// An `end` line.
    func fileEnd(inReply: Bool) throws(WireError) -> FileEnd {
        let id = try requestID()
        let file = try fileIndex(inReply: inReply)
        let digest = fields["sha256"] == nil || fields["sha256"] == .null ? nil : try hexBytes("sha256", count: 32, in: "end")
        return FileEnd(id: id, file: file, sha256: digest)
    }

    /// A `return` line.
    func returnHeader() throws(WireError) -> ReturnHeader {
        let id = try requestID()
        return ReturnHeader(id: id, file: try int("file", in: 0...(TransferRequest.maxReturns - 1)), header: try fileHeader())
    }

    /// A welcome's optional `files`.
    func fileSupport() throws(WireError) -> FileSupport? {
        guard fields["files"] != nil, fields["files"] != .null else { return nil }
        let files = try object("files")
        return FileSupport(version: try files.int("version", in: 1...Int.max),
                           maxFileSize: Int64(try files.int("max_file_size", in: 0...Int.max)))
    }

    /// `size`, `mode` and `mtime_ns` of this object.
    func fileHeader() throws(WireError) -> FileHeader {
        FileHeader(size: Int64(try int("size", in: 0...Int.max)), mode: try int("mode", in: 0...0o7777),
                   mtimeNanoseconds: Int64(try int("mtime_ns")))
    }

    /// The decoded bytes of a chunk's base64, or nil when it is not strict base64 of
    /// 1…`maxChunkBytes` bytes.
    static func chunkBytes(_ text: [UInt8]) -> Data? {
        text.withUnsafeBytes { chunkBytes($0) }
    }

    static func chunkBytes(_ text: UnsafeRawBufferPointer) -> Data? {
        guard text.count > 0, text.count <= Base64.encodedCount(maxChunkBytes) else { return nil }
        var data = Data(count: Base64.decodedCapacity(text.count))
        let count = data.withUnsafeMutableBytes { Base64.decode(text, into: $0) }
        guard let count, count > 0, count <= maxChunkBytes else { return nil }
        data.count = count
        return data
    }

    /// Throws unless `text` is a safe relative path (docs/PROTOCOL.md, "Files"): the error
    /// names the field and says what is wrong (`returns[0] "../x": a ".." component is refused`).
    static func safeRelativePath(_ text: String, field: String, id: Int) throws(WireError) {
        let path: TransferPath
        do { path = try TransferPath(text) } catch { throw .badRequest("\(field) \(error.description)", id: id) }
        guard !path.isAbsolute else {
            throw .badRequest("\(field) \"\(text.prefix(80))\": an absolute path is refused (send it relative to the work directory)", id: id)
        }
    }

    private func transferTask(id requestID: Int) throws(WireError) -> ScanTask {
        try jobTask(id: requestID)
    }

    private func fileIndex(inReply: Bool) throws(WireError) -> Int? {
        guard inReply else {
            guard fields["file"] == nil else { throw .badRequest("a request's \"\(fields["type"] == .string("end") ? "end" : "data")\" carries no \"file\"", id: id) }
            return nil
        }
        return try int("file", in: 0...(TransferRequest.maxReturns - 1))
    }

    func optionalBool(_ key: String) throws(WireError) -> Bool? {
        switch fields[key] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw .badRequest("\"\(key)\" must be true or false", id: id)
        }
    }

    private func stringArray(_ key: String, max: Int) throws(WireError) -> [String] {
        switch fields[key] {
        case nil, .null?: return []
        case .array(let values)?:
            guard values.count <= max else { throw .badRequest("\"\(key)\" holds more than \(max) entries", id: id) }
            var strings: [String] = []
            for value in values {
                guard case .string(let string) = value else { throw .badRequest("\"\(key)\" must hold only strings", id: id) }
                strings.append(string)
            }
            return strings
        default: throw .badRequest("\"\(key)\" must be an array of strings", id: id)
        }
    }
}

extension FileChunk {
    /// Decodes a binary `data` message (`message(id:file:offset:bytes:)`): its first byte is
    /// 0x00, then the id (two's complement), the file index (0xFF on a request, 0…63 on a reply), the offset, and
    /// 1…`maxChunkBytes` bytes. Anything else is a `bad-request`, with the id once it was read.
    package static func decode(binary message: Data, inReply: Bool) throws(WireError) -> FileChunk {
        let header = binaryHeaderCount
        guard message.count > header, message.first == 0 else {
            throw .badRequest("a binary data message holds an 18-byte header and 1…\(maxChunkBytes) bytes")
        }
        let (word, index, offset) = message.withUnsafeBytes { raw in
            (UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 1, as: UInt64.self)), raw[9],
             UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 10, as: UInt64.self)))
        }
        let id = Int(Int64(bitPattern: word))
        let file: Int?
        if inReply {
            guard Int(index) < TransferRequest.maxReturns else {
                throw .badRequest("a binary data message's file must be 0…\(TransferRequest.maxReturns - 1)", id: id)
            }
            file = Int(index)
        } else {
            guard index == 0xFF else { throw .badRequest("a request's binary data message carries no file (0xFF)", id: id) }
            file = nil
        }
        guard offset <= UInt64(Int64.max) else { throw .badRequest("a binary data message's offset is over 2^63 - 1", id: id) }
        guard message.count - header <= maxChunkBytes else {
            throw .badRequest("a binary data message holds at most \(maxChunkBytes) bytes", id: id)
        }
        return FileChunk(id: id, file: file, offset: Int64(offset), bytes: message.dropFirst(header))
    }
}
