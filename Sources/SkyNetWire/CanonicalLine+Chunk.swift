import SkyNetRuntime
import SkyNetWork

extension CanonicalLine {
    /// `{"type":"data","id":N,"offset":N,"data":"BASE64"}`, with `"file":N` after the id on a
    /// reply: the line of every file chunk, read without building a JSON tree around its
    /// 350,000 characters of base64, which is decoded straight into the chunk's bytes.
    ///
    /// Safe as the other fast paths: only this exact form is taken, and every part of it
    /// reads back as the general decoder reads it (integers in JSON's grammar, base64 that
    /// is strict, so one text per value); anything else returns nil and goes the long way,
    /// which decides (and refuses a bad chunk with its message).
    static func chunk(_ line: Data, inReply: Bool) -> FileChunk? {
        line.withUnsafeBytes { raw -> FileChunk? in
            raw.withMemoryRebound(to: UInt8.self) { bytes -> FileChunk? in
                var reader = ExactLineReader(bytes: bytes)
                guard reader.literal(#"{"type":"data","id":"#), let id = reader.integer() else { return nil }
                var file: Int?
                if inReply {
                    guard reader.literal(#","file":"#), let index = reader.integer(),
                          (0..<TransferRequest.maxReturns).contains(index) else { return nil }
                    file = index
                }
                guard reader.literal(#","offset":"#), let offset = reader.integer(), offset >= 0,
                      reader.literal(#","data":"#), let text = reader.rawStringBytes(),
                      reader.literal("}"), reader.atEnd,
                      let data = WireFields.chunkBytes(UnsafeRawBufferPointer(text))
                else { return nil }
                return FileChunk(id: id, file: file, offset: Int64(offset), bytes: data)
            }
        }
    }
}
