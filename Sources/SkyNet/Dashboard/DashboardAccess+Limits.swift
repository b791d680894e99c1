#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bounds of the login's state: pending nonces, paused prefixes, wrong proofs a second.
extension DashboardAccess.State {
    /// Keeps `nonce` for `address`, or says no (false) when every slot is held by others.
    /// An address at its 4 pushes out its own oldest; a full table makes room only from the
    /// asking address's own: another address's pending nonce is never pushed out.
    mutating func addNonce(_ nonce: String, from address: String, now: ContinuousClock.Instant) -> Bool {
        nonces.removeAll { $0.expires < now }
        let own = nonces.count(where: { $0.address == address })
        if own >= DashboardAccess.maxNoncesPerAddress || nonces.count >= DashboardAccess.maxNonces {
            guard own > 0, let oldest = nonces.firstIndex(where: { $0.address == address }) else { return false }
            nonces.remove(at: oldest)
        }
        nonces.append((nonce, address, now + DashboardAccess.nonceLifetime))
        return true
    }

    /// Whether another proof may be checked now: fewer than `maxWrongProofsPerSecond` wrong
    /// ones in the current second, over all addresses.
    mutating func mayCheckAProof(now: ContinuousClock.Instant) -> Bool {
        if now - wrongProofs.start >= .seconds(1) { wrongProofs = (now, 0) }
        return wrongProofs.count < DashboardAccess.maxWrongProofsPerSecond
    }

    /// Counts a wrong proof in the current second and holds back proofs from `prefix` for
    /// `wrongProofPause`, keeping at most `maxPaused` prefixes (the pauses over first, then
    /// the one that ends soonest).
    mutating func countWrongProof(from prefix: String, now: ContinuousClock.Instant) {
        wrongProofs.count += 1
        if pausedUntil[prefix] == nil, pausedUntil.count >= DashboardAccess.maxPaused {
            pausedUntil = pausedUntil.filter { $0.value > now }
            if pausedUntil.count >= DashboardAccess.maxPaused, let soonest = pausedUntil.min(by: { $0.value < $1.value }) {
                pausedUntil[soonest.key] = nil
            }
        }
        pausedUntil[prefix] = now + DashboardAccess.wrongProofPause
    }
}

extension DashboardAccess {
    /// The network a client address belongs to for throttling: its /24 for IPv4 (`10.9.8.0/24`),
    /// its /64 for IPv6 (an IPv4-mapped one as IPv4); anything else is its own.
    static func prefix(of address: String) -> String {
        var text = address
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        if text.lowercased().hasPrefix("::ffff:"), text.contains(".") { text = String(text.dropFirst(7)) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            let octets = withUnsafeBytes(of: &v4) { Array($0) }
            return "\(octets[0]).\(octets[1]).\(octets[2]).0/24"
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            let bytes = withUnsafeBytes(of: &v6) { Array($0.prefix(8)) }
            let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return groups.joined(separator: ":") + "::/64"
        }
        return address
    }
}
