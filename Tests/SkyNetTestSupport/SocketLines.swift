import SkyNet
import SkyNetRuntime
import SkyNetTransport

/// Reads lines from `socket` (blocking: call it on a thread of its own) until `count` have
/// arrived, or nothing has arrived for `silence`, or the peer closed.
package func receiveLines(from socket: Socket, count: Int, silence: Duration) -> [String] {
    socket.setReceiveTimeout(silence)
    var framer = LineFramer(maxLineBytes: 1 << 20)
    var lines: [String] = []
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
    defer { chunk.deallocate() }
    while lines.count < count {
        guard let received = try? socket.receive(into: chunk), received > 0 else { break }
        framer.feed(UnsafeRawBufferPointer(rebasing: chunk[..<received])) { output in
            if case .line(let data) = output { lines.append(String(decoding: data, as: UTF8.self)) }
        }
    }
    return lines
}
