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
        wrongProofsTotal += 1
        if pausedUntil[prefix] == nil, pausedUntil.count >= DashboardAccess.maxPaused {
            pausedUntil = pausedUntil.filter { $0.value > now }
            if pausedUntil.count >= DashboardAccess.maxPaused, let soonest = pausedUntil.min(by: { $0.value < $1.value }) {
                pausedUntil[soonest.key] = nil
            }
        }
        pausedUntil[prefix] = now + DashboardAccess.wrongProofPause
    }
}
