import SkyNetRuntime

/// What a `Connection` reads from and writes to: a TCP `Socket`, or a `DescriptorPair` (the
/// pipes to a child process, or this process's own stdin and stdout). The calls block but
/// `send(_:wait:)` with `wait: false`, so they run on threads of their own, never the pool.
package protocol ByteStream: Sendable {
    /// Reads what has arrived, waiting for at least one byte; 0 at the end (the peer closed,
    /// or reading was shut down here).
    func receive(into buffer: UnsafeMutableRawBufferPointer) throws(SocketError) -> Int
    /// Sends what can be sent now. With `wait: false` it never blocks and returns 0 when the
    /// peer's buffer is full; with `wait: true` it blocks until it can send something.
    func send(_ bytes: UnsafeRawBufferPointer, wait: Bool) throws(SocketError) -> Int
    /// Makes a blocked `receive` (reading) or `send` (writing) return: the way to stop the
    /// threads that use the stream before `close`.
    func shutdown(reading: Bool, writing: Bool)
    /// Bounds how long a blocking `receive` may wait; past it, `receive` throws.
    func setReceiveTimeout(_ timeout: Duration)
    /// Releases the descriptors. Call it exactly once, when no thread uses the stream any more.
    func close()
    /// Bytes sent that the peer has not taken yet (the kernel's send queue), when the stream
    /// can tell; nil when it cannot. Must not block.
    var unsentBytes: Int? { get }
}

extension ByteStream {
    package var unsentBytes: Int? { nil }

    /// `send(_:wait:)` for an array of bytes.
    package func send(_ bytes: [UInt8], wait: Bool) throws(SocketError) -> Int {
        try send(bytes[...], wait: wait)
    }

    /// `send(_:wait:)` for a part of an array (a queued message's rest), without a copy.
    package func send(_ bytes: ArraySlice<UInt8>, wait: Bool) throws(SocketError) -> Int {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(SocketError) in try send(buffer, wait: wait) }
        }
        return try result.get()
    }

    /// Shuts both directions down.
    package func shutdown() { shutdown(reading: true, writing: true) }
}

extension Socket: ByteStream {}
