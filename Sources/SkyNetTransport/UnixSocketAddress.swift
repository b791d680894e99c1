import SkyNetRuntime

/// An `AF_UNIX` socket address as `NOTIFY_SOCKET` gives one: an absolute path
/// (`/run/systemd/notify`) or, on Linux, an abstract name written with a leading `@`.
///
/// A path's address length counts its terminating NUL; an abstract name's counts the leading
/// NUL that stands for `@` and the name's bytes, nothing after them (the kernel compares
/// exactly that many bytes). Either form has at most 107 bytes as written.
package struct UnixSocketAddress: Sendable, CustomStringConvertible {
    /// The address as it was given.
    package let description: String
    /// The `sockaddr_un` bytes up to the address length.
    private let bytes: [UInt8]

    /// The most bytes a written address may have: `sun_path` less one (a path's NUL).
    package static let maxLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Parses `text`, or throws saying why it is no usable address.
    package init(_ text: String) throws(SocketError) {
        let operation = "unix socket address \(text.escapingControlCharacters)"
        let name = Array(text.utf8)
        guard !name.contains(0) else { throw SocketError(operation, reason: "holds a NUL byte") }
        guard name.count <= Self.maxLength else {
            throw SocketError(operation, reason: "has \(name.count) bytes, more than the \(Self.maxLength) that fit")
        }
        let path: [UInt8]
        if text.hasPrefix("@"), name.count > 1 {
            path = [0] + name.dropFirst()  // abstract: no terminating NUL
        } else if text.hasPrefix("/") {
            path = name + [0]
        } else {
            throw SocketError(operation, reason: "is neither an absolute path nor an abstract name (@NAME)")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let offset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2
        #if canImport(Darwin)
        address.sun_len = UInt8(offset + path.count)
        #endif
        let header = withUnsafeBytes(of: &address) { Array($0.prefix(offset)) }
        description = text
        bytes = header + path
    }

    /// Calls `body` with the address as a `sockaddr` and its length, for one syscall.
    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var address = sockaddr_un()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(bytes.count)) }
        }
    }
}
