import Foundation

/// State behind a pthread mutex with a condition: like `Locked`, and a thread of our own (a
/// reader, a flusher; never a task of the pool) can wait until the state satisfies something.
// @unchecked Sendable: safe because `state` is only touched with `condition`'s lock held.
package final class Guarded<State>: @unchecked Sendable {
    private let condition = NSCondition()
    private var state: State

    package init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the state, holding the lock, then wakes every waiter to look again.
    package func withLock<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return try body(&state)
    }

    /// Blocks the calling thread (never call it from async code) while `waiting(state)` holds,
    /// up to `deadline`; then runs `body` under the same lock. `timedOut` tells whether the
    /// deadline ended the wait.
    package func wait<Result>(while waiting: (State) -> Bool, deadline: ContinuousClock.Instant? = nil,
                      then body: (inout State, _ timedOut: Bool) -> Result) -> Result {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        var timedOut = false
        while waiting(state), !timedOut {
            if let deadline {
                let left = deadline - ContinuousClock.now
                timedOut = left <= .zero || !condition.wait(until: Date(timeIntervalSinceNow: left.seconds))
            } else {
                condition.wait()
            }
        }
        return body(&state, timedOut && waiting(state))
    }
}

/// Bytes waiting to be sent: appended at the back, consumed from the front without moving
/// the rest each time.
package struct ByteQueue {
    private var bytes: [UInt8] = []
    private var head = 0

    package init() {}

    package init(_ bytes: some Collection<UInt8>) {
        self.bytes = Array(bytes)
    }

    package var count: Int { bytes.count - head }
    package var isEmpty: Bool { count == 0 }

    package mutating func append(_ more: [UInt8]) {
        bytes.append(contentsOf: more)
    }

    /// Up to `limit` bytes from the front, left in the queue.
    package func front(_ limit: Int) -> [UInt8] {
        Array(bytes[head..<min(bytes.count, head + limit)])
    }

    package mutating func consume(_ count: Int) {
        head += min(count, self.count)
        // Compact once the sent part is the larger half: amortised O(1) per byte.
        if head == bytes.count {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 20)
            head = 0
        } else if head > bytes.count / 2 {
            bytes.removeFirst(head)
            head = 0
        }
    }
}
