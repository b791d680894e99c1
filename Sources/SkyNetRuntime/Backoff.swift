/// How long to wait after failures in a row: `first` after the first, doubling with each
/// further one, never more than `most`; with `jitter`, a random part of that cut off, so that
/// many waiters that failed together do not come back together.
///
/// The one backoff of the package: a link redialling its peer, a coordinator's slot resting
/// after `busy`, a node slowing repeated failed logins.
package struct Backoff: Sendable, Equatable {
    package var first: Duration
    package var most: Duration
    /// The largest share of a wait taken off at random (0: none; 0.5: waits of 50–100 %).
    package var jitter: Double

    package init(first: Duration, most: Duration, jitter: Double = 0) {
        self.first = first
        self.most = most
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The wait after the `failures`-th failure in a row (1 and below: `first`).
    package func delay(after failures: Int) -> Duration {
        // 2^20 × any first wait already passes every `most` in use; the cap keeps the shift defined.
        let ceiling = min(first * (1 << min(max(failures, 1) - 1, 20)), most)
        return jitter == 0 ? ceiling : ceiling * Double.random(in: (1 - jitter)...1)
    }
}
