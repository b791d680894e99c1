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
        let loop = EventLoop(name: "test-loop")
        let watch: Locked<EventLoop.Watch?> = Locked(nil)

        init() throws {
            let pipe = try ChildProcess.makePipe()
            (read, write) = (pipe.read, pipe.write)
            let flags = fcntl(read, F_GETFL, 0)
            _ = fcntl(read, F_SETFL, flags | O_NONBLOCK)
            let watch = try loop.watch(read, for: .readable) { [read, loop, seen] readiness in
                var buffer = [UInt8](repeating: 0, count: 64)
                let count = Glibc.read(read, &buffer, 64)
                seen.continuation.yield((max(0, count), loop.isCurrent, readiness.hungUp))
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
        pipe.loop.execute { pipe.watch.withLock { $0 }?.cancel(); _ = closeDescriptor(pipe.read) }
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
        let loop = EventLoop(name: "test-jobs")
        let order = Locked<[Int]>([]), done = AsyncSignal<Void>()
        for index in 0..<100 {
            loop.execute { order.withLock { $0.append(loop.isCurrent ? index : -1) } }
        }
        loop.execute { done.fulfil(()) }
        await done.value
        #expect(order.withLock { $0 } == Array(0..<100))
        #expect(!loop.isCurrent)
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
}
