import SkyNetRuntime

/// A stand-in for a flaky service: every `failingEvery`-th call fails.
///
/// One instance serves one process (the CLI makes one); the call counter is guarded by a
/// lock (`Locked`), so concurrent scans see exactly one failure per `failingEvery` calls.
package final class UnreliableAPI: Sendable {
    /// The reference failure: its description is the text users know from the ancestor.
    package struct Failure: Error, CustomStringConvertible, Equatable {
        package init() {}
        package var description: String { "UnreliableAPI.action(failingEvery:) failed." }
    }

    /// Fail every N-th call; 0 (or less) never fails.
    package let failingEvery: Int
    private let calls = Locked(0)

    package init(failingEvery: Int = 10) {
        self.failingEvery = max(0, failingEvery)
    }

    /// Counts the call and throws `Failure` on every `failingEvery`-th one.
    package func action() throws(Failure) {
        guard failingEvery > 0 else { return }
        let fails = calls.withLock { count in
            count = (count + 1) % failingEvery
            return count == 0
        }
        if fails { throw Failure() }
    }
}
