import SkyNetRuntime

/// Where names are looked up: a pool of its own, so that a slow resolver (thousands of peers
/// named, a DNS server that does not answer) never delays the file work of the blocking pool.
let resolverPool = BlockingPool(named: "skynet-resolve", maxThreads: 4)

/// One address `getaddrinfo` found for a host and port.
struct ResolvedAddress {
    let family: Int32
    let address: [UInt8]
    let length: socklen_t
}

extension Socket {
    /// Whether `host` (a name or a literal address) is reachable from this machine only:
    /// `localhost`, `::1` or an IPv4 address in 127.0.0.0/8.
    package static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false).map { UInt8($0) }
        return octets.count == 4 && octets.allSatisfy { $0 != nil } && octets[0] == 127
    }

    /// Whether `host` resolves to an address (a name is looked up on the resolver's pool; a
    /// numeric address needs no lookup).
    package static func resolves(host: String) async -> Bool {
        (try? await lookUp(host: host, port: 1)) != nil
    }

    /// Every address `host` resolves to, as numeric text (`10.0.3.7`, `fd00::7`), without
    /// repeats and sorted. The lookup runs on the resolver's pool (getaddrinfo blocks, for as
    /// long as the resolver takes), never on the cooperative pool.
    package static func addresses(of host: String, port: Int) async throws(SocketError) -> [String] {
        Set(try await lookUp(host: host, port: port).compactMap(numericHost)).sorted()
    }

    /// The addresses of `host:port` for connecting: a numeric host at once, a name looked up
    /// on the resolver's pool.
    static func lookUp(host: String, port: Int) async throws(SocketError) -> [ResolvedAddress] {
        if let numeric = try? resolve(host: host, port: port, passive: false, numericOnly: true) { return numeric }
        do {
            return try await resolverPool.run { try resolve(host: host, port: port, passive: false) }
        } catch let error as SocketError {
            throw error
        } catch {
            throw SocketError("resolve \(host)", reason: "\(error)")
        }
    }

    /// The numeric host of one resolved address, without its port; nil if it has none.
    private static func numericHost(_ resolved: ResolvedAddress) -> String? {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let status = resolved.address.withUnsafeBytes { bytes -> Int32 in
            guard let base = bytes.baseAddress else { return EAI_FAIL }
            return getnameinfo(base.assumingMemoryBound(to: sockaddr.self), resolved.length,
                               &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST)
        }
        return status == 0 ? text(host) : nil
    }

    /// The addresses of `host:port`, IPv4 and IPv6, in the resolver's order.
    /// With `numericOnly`, only a numeric host resolves (at once: no lookup that could block).
    static func resolve(host: String, port: Int, passive: Bool, numericOnly: Bool = false) throws(SocketError) -> [ResolvedAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_flags = (passive ? AI_PASSIVE : 0) | (numericOnly ? AI_NUMERICHOST : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            throw SocketError("resolve \(host)", reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }
        var found: [ResolvedAddress] = []
        var cursor = list
        while let info = cursor?.pointee {
            if let address = info.ai_addr {
                let bytes = UnsafeRawBufferPointer(start: address, count: Int(info.ai_addrlen))
                found.append(ResolvedAddress(family: info.ai_family, address: Array(bytes), length: info.ai_addrlen))
            }
            cursor = info.ai_next
        }
        return found
    }

    /// `host:port` of a socket address, numeric.
    static func describe(_ storage: inout sockaddr_storage, length: socklen_t) -> String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let status = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                            NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard status == 0 else { return "?" }
        return "\(text(host)):\(text(service))"
    }

    /// `host:port` as people and URLs write it: an IPv6 host in brackets (`[fd00::7]:9001`).
    package static func authority(host: String, port: Int) -> String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    /// The host part of a peer's `host:port` (IPv6 hosts keep their colons).
    package static func address(of peer: String) -> String {
        guard let colon = peer.lastIndex(of: ":") else { return peer }
        return String(peer[..<colon])
    }
}

/// The text of a NUL-terminated C buffer.
private func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
