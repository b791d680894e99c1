#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The timer's state behind a pthread mutex, with a condition whose timed waits are absolute
/// on the monotonic clock (NSCondition waits until a wall-clock `Date`, which a clock change
/// moves, and converts each time).
// @unchecked Sendable: safe because `state` is only touched with `mutex` held.
final class TimerMonitor<State>: @unchecked Sendable {
    enum Decision<Result> {
        case wait(until: ContinuousClock.Instant?)
        /// Let go of the lock, yield the core once, then ask again (the last stretch before a
        /// deadline, where a timed wait would end late).
        case spin
        case done(Result)
    }

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var state: State

    init(_ state: State) {
        self.state = state
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if canImport(Glibc)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` under the lock; `body` may call its `signal` to wake the waiting thread.
    func withLock<Result>(_ body: (inout State, _ signal: () -> Void) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&state) { pthread_cond_signal(condition) }
    }

    /// Blocks the calling thread (one of our own) until `decide` returns `.done`: it is asked
    /// under the lock, and again after each wake-up or deadline it asked to wait for.
    func wait<Result>(_ decide: (inout State) -> Decision<Result>) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            switch decide(&state) {
            case .done(let result):
                return result
            case .spin:
                // Yield once and ask again: a deadline scheduled meanwhile (earlier than the
                // one spun for), or that one's cancellation, is seen at once.
                pthread_mutex_unlock(mutex)
                sched_yield()
                pthread_mutex_lock(mutex)
            case .wait(until: nil):
                pthread_cond_wait(condition, mutex)
            case .wait(until: let deadline?):
                #if canImport(Glibc)
                var time = Self.monotonicTimespec(deadline)
                _ = pthread_cond_timedwait(condition, mutex, &time)
                #else
                // Darwin cannot set a condition's clock (it waits on the wall clock): wait the
                // time left instead.
                let (seconds, attoseconds) = max(deadline - ContinuousClock.now, .zero).components
                var time = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
                _ = pthread_cond_timedwait_relative_np(condition, mutex, &time)
                #endif
            }
        }
    }

    /// `instant` as CLOCK_MONOTONIC time, the clock the condition waits on (counted from now,
    /// so it holds whichever clock `ContinuousClock` reads).
    private static func monotonicTimespec(_ instant: ContinuousClock.Instant) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let left = instant - ContinuousClock.now
        let (seconds, attoseconds) = left.components
        var result = timespec(tv_sec: now.tv_sec + Int(seconds), tv_nsec: now.tv_nsec + Int(attoseconds / 1_000_000_000))
        if result.tv_nsec >= 1_000_000_000 { result.tv_sec += 1; result.tv_nsec -= 1_000_000_000 }
        if result.tv_nsec < 0 { result.tv_sec -= 1; result.tv_nsec += 1_000_000_000 }
        return result
    }
}
