import SkyNetAuth
import SkyNetRuntime

extension OpenFile {
    /// The bytes read from the file up to its end, and their SHA-256, in 256 KiB reads: what a
    /// returned file is recorded and checked by (blocking: call it on a thread of its own).
    package func sizeAndSHA256() throws -> (size: Int64, sha256: [UInt8]) {
        var hash = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 18)
        var size: Int64 = 0
        while true {
            let count = try buffer.withUnsafeMutableBytes { (raw) throws(FileError) in try read(into: raw, at: size) }
            if count == 0 { break }
            buffer.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
            size += Int64(count)
        }
        return (size, hash.finalize())
    }
}
