/// Little-endian words read from bytes: the byte order ChaCha20, Poly1305 and X25519 read
/// their keys, nonces and blocks in, whatever the machine's. No branch on the bytes.
enum LittleEndian {
    @inline(__always) static func word32(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self))
    }

    @inline(__always) static func word64(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self))
    }

    /// `word`'s 4 bytes written to `bytes` from `at`.
    @inline(__always) static func store(_ word: UInt32, _ bytes: UnsafeMutableRawBufferPointer, _ at: Int) {
        bytes.storeBytes(of: word.littleEndian, toByteOffset: at, as: UInt32.self)
    }

    /// `word`'s 8 bytes written to `bytes` from `at`.
    @inline(__always) static func store(_ word: UInt64, _ bytes: UnsafeMutableRawBufferPointer, _ at: Int) {
        bytes.storeBytes(of: word.littleEndian, toByteOffset: at, as: UInt64.self)
    }
}
