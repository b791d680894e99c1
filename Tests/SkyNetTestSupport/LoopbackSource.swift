import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import SkyNetTransport

#if os(Linux)
/// Connects to 127.0.0.1:`port` from the IPv4 address `source` (Linux answers for all of
/// 127.0.0.0/8, so 127.0.0.2 is a second loopback client address), blocking.
package func connectFrom(_ source: String, toPort port: Int) throws -> Socket {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
    let socket = Socket(descriptor: descriptor)
    func address(_ host: String, _ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        _ = inet_pton(AF_INET, host, &address.sin_addr)
        return address
    }
    var local = address(source, 0), remote = address("127.0.0.1", port)
    let length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
    let connected = bound == 0
        ? withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, length) } } : -1
    guard connected == 0 else {
        let reason = String(cString: strerror(errno))
        socket.close()
        throw TestFailure("connect from \(source): \(reason)")
    }
    return socket
}
#endif
