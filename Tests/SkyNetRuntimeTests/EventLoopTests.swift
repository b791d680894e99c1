import Testing
@testable import SkyNetRuntime
import SkyNetTestSupport

/// The event loop runs a watched descriptor's handler on its own thread when the descriptor is
/// ready, and only then; its jobs in order; and nothing of a watch once it is cancelled there.
@Suite(.timeLimit(.minutes(1)))
struct EventLoopTests {
    /// A pipe whose read end the loop watches; the handler reads what is there and tells.
    final class WatchedPipe: Sendable {
        let read: Int32, write: Int32
        let seen = AsyncStream<(bytes: Int, onLoop: Bool, hungUp: Bool)>.makeStream()
        let loop: EventLoop
        let watch: Locked<EventLoop.Watch?> = Locked(nil)
        /// Set while the test holds the watch idle; `callsWhilePaused` counts the handler's calls then.
        let paused = Locked(false), callsWhilePaused = Locked(0)

        init() throws {
            loop = try EventLoop(name: "test-loop")
            let pipe = try ChildProcess.makePipe()
            (read, write) = (pipe.read, pipe.write)
            let flags = fcntl(read, F_GETFL, 0)
            _ = fcntl(read, F_SETFL, flags | O_NONBLOCK)
            let watch = try loop.watch(read, for: .readable) { [read, loop, seen, watch = self.watch, paused, callsWhilePaused] readiness in
                if paused.withLock({ $0 }) { callsWhilePaused.withLock { $0 += 1 } }
                var buffer = [UInt8](repeating: 0, count: 64)
                let count = Glibc.read(read, &buffer, 64)
                seen.continuation.yield((max(0, count), loop.isCurrent, readiness.hungUp))
                // At the end, as a user of the loop must: a hang-up is told until the watch ends.
                if count == 0 { watch.withLock { $0 }?.cancel() }
            }
            self.watch.withLock { $0 = watch }
        }

        func send(_ count: Int) {
            let bytes = [UInt8](repeating: 7, count: count)
            _ = Glibc.write(write, bytes, count)
        }
    }

    @Test func aReadyDescriptorsHandlerRunsOnTheLoopsThread() async throws {
        let pipe = try WatchedPipe()
        var seen = pipe.seen.stream.makeAsyncIterator()
        pipe.send(3)
        let first = try #require(await seen.next())
        #expect(first.bytes == 3 && first.onLoop && !first.hungUp)
        pipe.send(5)
        #expect(await seen.next()?.bytes == 5)
        _ = closeDescriptor(pipe.write)
        let last = try #require(await seen.next())
        #expect(last.bytes == 0 && last.hungUp)
        pipe.loop.execute { _ = closeDescriptor(pipe.read) }  // the handler ended the watch
    }

    @Test func aWatchWithNoInterestIsNotCalledUntilItIsWaitedOnAgain() async throws {
        let pipe = try WatchedPipe()
        var seen = pipe.seen.stream.makeAsyncIterator()
        let watch = try #require(pipe.watch.withLock { $0 })
        watch.change(to: [])
        pipe.send(4)
        // A job queued after the write runs after the loop has looked at the descriptor.
        let looked = AsyncSignal<Void>()
        pipe.loop.execute { looked.fulfil(()) }
        await looked.value
        watch.change(to: .readable)
        let next = try #require(await seen.next())
        #expect(next.bytes == 4)  // one call, after the change: nothing was read before it
        pipe.loop.execute { watch.cancel(); _ = closeDescriptor(pipe.read); _ = closeDescriptor(pipe.write) }
    }

    @Test func jobsRunInOrderOnTheLoopsThread() async throws {
        let loop = try EventLoop(name: "test-jobs")
        let order = Locked<[Int]>([]), done = AsyncSignal<Void>()
        for index in 0..<100 {
            loop.execute { order.withLock { $0.append(loop.isCurrent ? index : -1) } }
        }
        loop.execute { done.fulfil(()) }
        await done.value
        #expect(order.withLock { $0 } == Array(0..<100))
        #expect(!loop.isCurrent)
    }

    /// The loop takes its queued jobs by swapping arrays with the queues: over many rounds and
    /// turns, with jobs given from outside, from jobs on the loop and for the next turn, every
    /// job runs once, and those given from outside in the order given.
    @Test func jobsGivenOverManyRoundsEachRunOnce() async throws {
        let loop = try EventLoop(name: "test-rounds")
        let outside = 3_000
        // Every 7th job gives another at once, every 11th one for the next turn.
        let expected = outside + (0..<outside).count { $0 % 7 == 0 } + (0..<outside).count { $0 % 11 == 0 }
        let ran = Locked<[Int]>([]), done = AsyncSignal<Void>()
        @Sendable func record(_ number: Int) {
            let count = ran.withLock { $0.append(number); return $0.count }
            if count == expected { done.fulfil(()) }
        }
        for batch in stride(from: 0, to: outside, by: 100) {
            for number in batch..<batch + 100 {
                loop.execute {
                    record(number)
                    if number % 7 == 0 { loop.execute { record(outside + number) } }
                    if number % 11 == 0 { loop.executeNextTurn { record(2 * outside + number) } }
                }
            }
            let looked = AsyncSignal<Void>()  // a turn of the loop between batches
            loop.execute { looked.fulfil(()) }
            await looked.value
        }
        await done.value
        // A chain longer than a turn's rounds: the jobs left after the last round keep the
        // loop from waiting on its descriptors, with nothing to wake it.
        let chained = AsyncSignal<Int>()
        @Sendable func link(_ depth: Int) {
            if depth == 10 * EventLoop.jobRoundsPerTurn { return chained.fulfil(depth) }
            loop.execute { link(depth + 1) }
        }
        loop.execute { link(0) }
        #expect(await chained.value == 10 * EventLoop.jobRoundsPerTurn)
        let numbers = ran.withLock { $0 }
        #expect(numbers.count == expected)
        #expect(Set(numbers).count == expected, "a job ran twice")
        #expect(numbers.filter { $0 < outside }.elementsEqual(0..<outside), "out of order")
    }

    /// epoll tells a hang-up whatever a descriptor is waited on for: a watch with no interest
    /// must hear nothing of it (else its loop would spin on it) until it is waited on again.
    @Test func aWatchWithNoInterestIsNotToldOfAHangUpUntilItIsWaitedOnAgain() async throws {
        let pipe = try WatchedPipe()
        var seen = pipe.seen.stream.makeAsyncIterator()
        let watch = try #require(pipe.watch.withLock { $0 })
        pipe.paused.withLock { $0 = true }
        watch.change(to: [])
        _ = closeDescriptor(pipe.write)
        for _ in 0..<3 {  // a few turns of the loop
            let looked = AsyncSignal<Void>()
            pipe.loop.execute { looked.fulfil(()) }
            await looked.value
        }
        pipe.paused.withLock { $0 = false }
        #expect(pipe.callsWhilePaused.withLock { $0 } == 0)
        watch.change(to: .readable)
        let next = try #require(await seen.next())
        #expect(next.bytes == 0 && next.hungUp)
        let closed = AsyncSignal<Void>()
        pipe.loop.execute { _ = closeDescriptor(pipe.read); closed.fulfil(()) }
        await closed.value
        pipe.seen.continuation.finish()
        var more = 0
        while await seen.next() != nil { more += 1 }
        #expect(more == 0, "the hang-up was told \(more + 1) times")
    }

    @Test func aWatchCancelledOnTheLoopIsNeverCalledAgain() async throws {
        let pipe = try WatchedPipe()
        let watch = try #require(pipe.watch.withLock { $0 })
        let cancelled = AsyncSignal<Void>()
        pipe.loop.execute { watch.cancel(); cancelled.fulfil(()) }
        await cancelled.value
        pipe.send(2)
        let looked = AsyncSignal<Void>()
        pipe.loop.execute { looked.fulfil(()) }
        await looked.value
        var buffer = [UInt8](repeating: 0, count: 8)
        #expect(read(pipe.read, &buffer, 8) == 2)  // still there: no handler read it
        _ = closeDescriptor(pipe.read)
        _ = closeDescriptor(pipe.write)
    }

    /// A job given on the loop's own thread does not wake it (no write to its eventfd): the
    /// loop must look at its jobs before it waits, or this one would wait for a descriptor.
    @Test func aJobGivenOnTheLoopsThreadRunsWithoutAWake() async throws {
        let loop = try EventLoop(name: "test-own-jobs")
        let done = AsyncSignal<Int>()
        loop.execute { loop.execute { loop.execute { done.fulfil(2) } } }
        #expect(await done.value == 2)
    }

    /// A task that prefers a loop runs on its thread, and comes back to it after a suspension
    /// that a loop's job resumed: work a handler starts crosses no thread.
    @Test func aTaskThatPrefersTheLoopRunsOnItsThread() async throws {
        let loop = try EventLoop(name: "test-executor")
        let (before, after) = await Task(executorPreference: loop) { () -> (Bool, Bool) in
            let before = loop.isCurrent
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                loop.execute { continuation.resume() }
            }
            return (before, loop.isCurrent)
        }.value
        #expect(before && after)
        #expect(!loop.isCurrent)
    }
}
