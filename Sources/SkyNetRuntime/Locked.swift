import Foundation

/// State guarded by a lock, for the few fields a thread of our own (a reader, the accept
/// loop) shares with async code.
///
/// NSLock (a pthread mutex) rather than Synchronization's `Mutex`: on Linux `Mutex` locks
/// with raw futex calls that ThreadSanitizer does not see, so every guarded access was
/// reported as a race. With a pthread mutex the sanitizer checks our locking for real.
public final class Locked<State: Sendable>: @unchecked Sendable {
    // @unchecked: safe because `state` is only touched inside `withLock`, under `lock`.
    private let lock = NSLock()
    private var state: State

    public init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the state, holding the lock; keep it short and never await in it.
    public func withLock<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// Runs `body` only if the lock is free right now; nil when it is held.
    public func withLockIfAvailable<Result>(_ body: (inout State) -> Result) -> Result? {
        guard lock.try() else { return nil }
        defer { lock.unlock() }
        return body(&state)
    }
}
