/// State behind a pthread mutex with a condition: the project's one lock, and its one way for
/// a thread of our own (a reader, a flusher, the writer; never a task of the pool) to wait
/// until the state satisfies something. `Locked` is its name where nobody waits.
///
/// A pthread mutex rather than Synchronization's `Mutex`: on Linux `Mutex` locks with raw
/// futex calls that ThreadSanitizer does not see, so every guarded access was reported as a
/// race. With pthread calls the sanitizer checks our locking for real.
package final class Guarded<State> {
    /// The mutex and, after it, the condition: one allocation. Most guarded state is never
    /// waited on (a `Locked` made per request or per sleep), so the condition is initialised
    /// only when a first waiter comes (`conditionReady`, under the mutex).
    private let storage = UnsafeMutableRawPointer.allocate(byteCount: Guarded.conditionOffset + MemoryLayout<pthread_cond_t>.size,
                                                           alignment: max(MemoryLayout<pthread_mutex_t>.alignment,
                                                                          MemoryLayout<pthread_cond_t>.alignment))
    private var mutex: UnsafeMutablePointer<pthread_mutex_t> { storage.assumingMemoryBound(to: pthread_mutex_t.self) }
    private var condition: UnsafeMutablePointer<pthread_cond_t> {
        (storage + Self.conditionOffset).assumingMemoryBound(to: pthread_cond_t.self)
    }
    private static var conditionOffset: Int {
        let alignment = MemoryLayout<pthread_cond_t>.alignment
        return (MemoryLayout<pthread_mutex_t>.size + alignment - 1) / alignment * alignment
    }
    private var conditionReady = false
    private var state: State
    /// Threads inside `wait`: a change wakes them only when there are some.
    private var waiters = 0

    package init(_ state: State) {
        self.state = state
        storage.bindMemory(to: pthread_mutex_t.self, capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        if conditionReady { pthread_cond_destroy(condition) }
        pthread_mutex_destroy(mutex)
        storage.deallocate()
    }

    /// Initialises the condition, once; called with the mutex held.
    private func prepareCondition() {
        guard !conditionReady else { return }
        (storage + Self.conditionOffset).bindMemory(to: pthread_cond_t.self, capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if canImport(Glibc)
        // Timed waits end on the monotonic clock, which no change of the wall clock moves.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        conditionReady = true
    }

    /// Runs `body` with the state, holding the lock, then wakes every waiter to look again.
    /// Keep it short and never await in it.
    package func withLock<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { unlock() }
        return try body(&state)
    }

    /// Runs `body` only if the lock is free right now; nil when it is held.
    package func withLockIfAvailable<Result>(_ body: (inout State) -> Result) -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { unlock() }
        return body(&state)
    }

    /// Blocks the calling thread (never call it from async code) while `waiting(state)` holds,
    /// up to `deadline`; then runs `body` under the same lock. `timedOut` tells whether the
    /// deadline ended the wait.
    package func wait<Result>(while waiting: (State) -> Bool, deadline: ContinuousClock.Instant? = nil,
                             then body: (inout State, _ timedOut: Bool) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { unlock() }
        var timedOut = false
        prepareCondition()
        waiters += 1
        while waiting(state), !timedOut {
            guard let deadline else {
                pthread_cond_wait(condition, mutex)
                continue
            }
            let left = deadline - ContinuousClock.now
            timedOut = left <= .zero || Self.wait(on: condition, with: mutex, for: left) == ETIMEDOUT
        }
        waiters -= 1
        return body(&state, timedOut && waiting(state))
    }

    private func unlock() {
        if waiters > 0 { pthread_cond_broadcast(condition) }
        pthread_mutex_unlock(mutex)
    }

    /// One timed wait of at most `left`: 0 when woken, ETIMEDOUT when the time ran out.
    private static func wait(on condition: UnsafeMutablePointer<pthread_cond_t>, with mutex: UnsafeMutablePointer<pthread_mutex_t>,
                             for left: Duration) -> Int32 {
        let (seconds, attoseconds) = left.components
        #if canImport(Glibc)
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        time.tv_sec += Int(seconds)
        time.tv_nsec += Int(attoseconds / 1_000_000_000)
        if time.tv_nsec >= 1_000_000_000 { time.tv_sec += 1; time.tv_nsec -= 1_000_000_000 }
        return pthread_cond_timedwait(condition, mutex, &time)
        #else
        // Darwin cannot set a condition's clock (it waits on the wall clock): wait the time left.
        var time = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        return pthread_cond_timedwait_relative_np(condition, mutex, &time)
        #endif
    }
}

// @unchecked Sendable: safe because `state`, `waiters` and `conditionReady` are only touched
// with `mutex` held.
extension Guarded: @unchecked Sendable where State: Sendable {}

/// `Guarded` where nobody waits: state a thread of our own (a reader, the accept loop) shares
/// with async code, behind the same pthread mutex.
package typealias Locked<State: Sendable> = Guarded<State>

/// Bytes waiting to be sent: the messages as they were queued (no copy), consumed from the
/// front. `front` hands out a large message's bytes as they are, and gathers small ones into
/// one array, so a file's chunk is never copied to be sent and many short lines still leave
/// in one system call.
package struct ByteQueue {
    private var chunks: [ArraySlice<UInt8>] = []
    /// The first chunk not yet sent whole (those before it are spent until compaction).
    private var head = 0
    package private(set) var count = 0

    /// A message at least this long is sent from its own bytes, not gathered with others.
    static let gatherBelow = 32 * 1024

    package init() {}

    package init(_ bytes: ArraySlice<UInt8>) {
        append(bytes)
    }

    package var isEmpty: Bool { count == 0 }

    package mutating func append(_ more: [UInt8]) {
        append(more[...])
    }

    package mutating func append(_ more: ArraySlice<UInt8>) {
        guard !more.isEmpty else { return }
        chunks.append(more)
        count += more.count
    }

    /// Everything `other` holds, after this queue's bytes.
    package mutating func append(contentsOf other: ByteQueue) {
        for chunk in other.chunks[other.head...] { append(chunk) }
    }

    /// Up to `limit` bytes from the front, left in the queue: the first message's own bytes
    /// when it is large, else the small messages from the front gathered into one array.
    package func front(_ limit: Int) -> ArraySlice<UInt8> {
        guard head < chunks.count else { return [] }
        let first = chunks[head]
        if first.count >= Self.gatherBelow || head + 1 == chunks.count { return first.prefix(limit) }
        var gathered: [UInt8] = []
        gathered.reserveCapacity(min(limit, count))
        for chunk in chunks[head...] {
            if !gathered.isEmpty, chunk.count >= Self.gatherBelow { break }
            gathered.append(contentsOf: chunk.prefix(limit - gathered.count))
            if gathered.count == limit { break }
        }
        return gathered[...]
    }

    package mutating func consume(_ sent: Int) {
        var left = min(sent, count)
        count -= left
        while left > 0 {
            let first = chunks[head]
            if left < first.count {
                chunks[head] = first.dropFirst(left)
                break
            }
            left -= first.count
            chunks[head] = []  // its bytes are released now, not at compaction
            head += 1
        }
        // Compact once the spent chunks are the larger half: amortised O(1) per message.
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: chunks.capacity <= 1024)
            head = 0
        } else if head > chunks.count / 2 {
            chunks.removeFirst(head)
            head = 0
        }
    }
}
