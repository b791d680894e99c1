import Dispatch
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetTransport
import SkyNetTestSupport

/// The CLI's output queue through pipes of our own, read by threads of our own: order, records
/// kept whole, back pressure without dropping or blocking the pool, flush, failed descriptors,
/// counted drops, and one `write` per run of lines.
@Suite(.timeLimit(.minutes(3)))
struct LineWriterTests {
    /// Flushes `writer` (bounded), closes the pipes' write ends and returns what each pipe got.
    func finish(_ writer: LineWriter, _ pipes: TestPipe...) async throws -> [String] {
        for pipe in pipes { pipe.startReading() }
        try await withTimeout(.seconds(30)) { await writer.flush() }
        var texts: [String] = []
        for pipe in pipes {
            pipe.closeWriteEnd()
            texts.append(String(decoding: try await pipe.waitForEnd(), as: UTF8.self))
        }
        return texts
    }

    /// Whether a producer waits for room: an empty offer fits whenever the queue holds no more
    /// than its capacity, so it is refused only when someone waits ahead of it.
    func someoneWaits(_ writer: LineWriter, probe: Int32) -> Bool {
        !writer.offer("", to: probe)
    }

    /// `/dev/null`, for the empty probe offers (they write nothing), closed after `body`.
    func withProbe<T>(_ body: (Int32) async throws -> T) async throws -> T {
        let probe = open("/dev/null", O_WRONLY)
        guard probe >= 0 else { throw TestPipe.Failure(description: "open /dev/null") }
        defer { close(probe) }
        return try await body(probe)
    }

    @Test func tenThousandLinesAlternatingBetweenTwoPipesArriveWholeAndInOrderInEach() async throws {
        let even = try TestPipe(), odd = try TestPipe()
        even.startReading()
        odd.startReading()
        // A small queue: producers wait for room again and again on the way.
        let writer = LineWriter(capacity: 1024)
        for i in 0..<10_000 {
            await writer.write("line \(i)\n", to: i.isMultiple(of: 2) ? even.writeEnd : odd.writeEnd)
        }
        let texts = try await finish(writer, even, odd)
        #expect(texts[0] == stride(from: 0, to: 10_000, by: 2).map { "line \($0)\n" }.joined())
        #expect(texts[1] == stride(from: 1, to: 10_000, by: 2).map { "line \($0)\n" }.joined())
    }

    @Test func piecesWrittenTogetherStayTogetherAndEachProducerKeepsItsOrder() async throws {
        let pipe = try TestPipe()
        pipe.startReading()
        let writer = LineWriter(capacity: 512)
        let producers = 4, records = 1_000
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for i in 0..<records {
                        // Three pieces, one record: nothing may come between them.
                        await writer.write([LineWriter.Piece("p\(producer) ", to: pipe.writeEnd),
                                            LineWriter.Piece("r\(i) ", to: pipe.writeEnd),
                                            LineWriter.Piece("end\n", to: pipe.writeEnd)])
                    }
                }
            }
        }
        let lines = try await finish(writer, pipe)[0].split(separator: "\n").map(String.init)
        #expect(lines.count == producers * records)
        for producer in 0..<producers {
            let own = lines.filter { $0.hasPrefix("p\(producer) ") }
            #expect(own == (0..<records).map { "p\(producer) r\($0) end" })
        }
    }

    @Test func aRecordLargerThanTheQueueIsWrittenWholeInItsPlace() async throws {
        let pipe = try TestPipe()
        pipe.startReading()
        let writer = LineWriter(capacity: 16)
        let big = String(repeating: "x", count: 200_000) + "\n"  // larger than the pipe, too
        await writer.write("before\n", to: pipe.writeEnd)
        await writer.write(big, to: pipe.writeEnd)
        await writer.write("after\n", to: pipe.writeEnd)
        #expect(try await finish(writer, pipe)[0] == "before\n" + big + "after\n")
    }

    @Test func aConditionThatTurnsFalseDropsTheLaterConditionalPiecesOnly() async throws {
        let pipe = try TestPipe()
        pipe.startReading()
        let writer = LineWriter(capacity: 256)
        let open = Locked(true)
        for i in 0..<100 {
            if i == 50 { open.withLock { $0 = false } }
            await writer.write([LineWriter.Piece("gated \(i)\n", to: pipe.writeEnd)], if: { open.withLock { $0 } })
            await writer.write("plain \(i)\n", to: pipe.writeEnd)
        }
        let expected = (0..<100).map { i in (i < 50 ? "gated \(i)\n" : "") + "plain \(i)\n" }.joined()
        #expect(try await finish(writer, pipe)[0] == expected)
    }

    /// The condition is asked when the pieces would be taken, after their wait for room: a gate
    /// closed while they wait keeps them out.
    @Test func aConditionIsAskedWhenTheWaitingPiecesWouldBeTakenNotWhenTheyCame() async throws {
        try await withProbe { probe in
            let pipe = try TestPipe()
            let prefill = try pipe.fill()
            defer { pipe.startReading() }  // on any path: the writer thread must not stay stuck
            let writer = LineWriter(capacity: 1000)
            await writer.write("first\n", to: pipe.writeEnd)  // taken; the thread blocks on the full pipe
            let open = Locked(true)
            let blocked = String(repeating: "c", count: 999) + "\n"  // the whole capacity: must wait
            let waiting = Task {
                await writer.write([LineWriter.Piece(blocked, to: pipe.writeEnd)], if: { open.withLock { $0 } })
            }
            try await awaitState { someoneWaits(writer, probe: probe) }
            open.withLock { $0 = false }
            pipe.startReading()
            try await withTimeout(.seconds(60)) { await waiting.value }  // ends a hang only: CI's opening burst starves tasks
            await writer.write("after\n", to: pipe.writeEnd)
            let text = try await finish(writer, pipe)[0]
            #expect(text == String(repeating: "f", count: prefill) + "first\nafter\n")
        }
    }

    /// Producers of a pipe nobody reads fill the queue and wait, suspended: more producers than
    /// the pool has threads, and other tasks still run; nothing is dropped once it is read.
    @Test func producersOfAPipeNobodyReadsWaitSuspendedWithoutDroppingOrBlockingThePool() async throws {
        try await withProbe { probe in
            let pipe = try TestPipe()
            let prefill = try pipe.fill()
            // Should the producers block the pool's threads, nothing of this test could run any
            // more: a thread of ours then reads the pipe after a bound, and the test fails.
            let readAnyway = DispatchSemaphore(value: 0)
            let rescued = Flag()
            startThread(named: "test-rescue") {
                // Blocked producers would block for ever; 60 s only tells them from a loaded
                // machine (15 s was passed at a load average of 25).
                if readAnyway.wait(timeout: .now() + 60) == .timedOut {
                    rescued.set()
                    pipe.startReading()
                }
            }
            defer {
                readAnyway.signal()
                pipe.startReading()
            }
            let capacity = 1024, lineSize = 64, producers = 4, lines = 200
            let writer = LineWriter(capacity: capacity)
            let written = Counter()
            let tasks = (0..<producers).map { producer in
                Task.detached {
                    for i in 0..<lines {
                        let head = "p\(producer) \(i) "
                        await writer.write(head + String(repeating: ".", count: lineSize - 1 - head.utf8.count) + "\n", to: pipe.writeEnd)
                        written.increment()
                    }
                }
            }
            try await awaitState { someoneWaits(writer, probe: probe) }
            // Other tasks run while the producers wait.
            let ran = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<16 { group.addTask { await Task.yield(); return 1 } }
                return await group.reduce(0, +)
            }
            #expect(ran == 16)
            #expect(pipe.unread == prefill, "nothing was read, so nothing could be written")
            // Nothing can have been written: at most a queue's worth was taken.
            #expect(written.value <= capacity / lineSize, "\(written.value) writes returned")
            readAnyway.signal()
            pipe.startReading()
            for task in tasks { try await withTimeout(.seconds(30)) { await task.value } }  // hang guards, like the flushes
            let text = try await finish(writer, pipe)[0]
            #expect(!rescued.isSet, "the producers blocked the pool")
            #expect(text.prefix(prefill) == Substring(String(repeating: "f", count: prefill)))
            let got = text.dropFirst(prefill).split(separator: "\n").map { $0.split(separator: " ").prefix(2).joined(separator: " ") }
            #expect(got.count == producers * lines)
            for producer in 0..<producers {
                #expect(got.filter { $0.hasPrefix("p\(producer) ") } == (0..<lines).map { "p\(producer) \($0)" })
            }
        }
    }

    @Test func flushReturnsOnlyOnceEverythingQueuedBeforeItIsInThePipes() async throws {
        let first = try TestPipe(), second = try TestPipe()
        let writer = LineWriter()
        var expected = ["", ""]
        for i in 0..<1_000 {
            let line = "line \(i)\n"
            expected[i % 2] += line
            await writer.write(line, to: i.isMultiple(of: 2) ? first.writeEnd : second.writeEnd)
        }
        try await withTimeout(.seconds(30)) { await writer.flush() }
        // Nobody reads yet: what flush waited for is all in the pipes.
        #expect(first.unread == expected[0].utf8.count)
        #expect(second.unread == expected[1].utf8.count)
        #expect(try await finish(writer, first, second) == expected)
    }

    /// A flush waits for the producers that were waiting for room when it was called, too.
    @Test func flushWaitsForWhatWasWaitingForRoomWhenItWasCalled() async throws {
        try await withProbe { probe in
            let pipe = try TestPipe()
            let prefill = try pipe.fill()
            defer { pipe.startReading() }
            let writer = LineWriter(capacity: 1000)
            await writer.write("first\n", to: pipe.writeEnd)  // taken; the thread blocks on the full pipe
            let big = String(repeating: "b", count: 999) + "\n"
            let waiting = Task { await writer.write(big, to: pipe.writeEnd) }
            try await awaitState { someoneWaits(writer, probe: probe) }
            let started = Flag()
            let flushing = Task {
                started.set()
                await writer.flush()
                return pipe.unread  // the reader stops after the prefill: the rest stays in the pipe
            }
            try await started.wait(upTo: .seconds(10))
            pipe.startReading(upTo: prefill)
            let unread = try await withTimeout(.seconds(10)) { await flushing.value }
            #expect(unread == "first\n".utf8.count + big.utf8.count)
            await waiting.value
            #expect(try await finish(writer, pipe)[0] == String(repeating: "f", count: prefill) + "first\n" + big)
        }
    }

    /// A pipe whose reader left fails (EPIPE); what follows for it is dropped, the other pipe
    /// keeps getting its lines, and `failure(of:)` says why.
    @Test func aFailedDescriptorDropsItsLinesWhileTheOtherKeepsGettingTheirs() async throws {
        Socket.ignoreBrokenPipes()
        let closed = try TestPipe(), healthy = try TestPipe()
        healthy.startReading()
        let writer = LineWriter(capacity: 1024)
        await writer.write("first\n", to: closed.writeEnd)
        closed.startReading(upTo: 6)
        try await closed.waitForBytes(6)
        // Its reader has stopped reading: once the read end is closed, writes get EPIPE.
        try await awaitState { !closed.isReading }
        closed.closeReadEnd()
        #expect(writer.failure(of: closed.writeEnd) == nil)
        var expected = ""
        for i in 0..<2_000 {
            await writer.write("gone \(i)\n", to: closed.writeEnd)
            await writer.write("kept \(i)\n", to: healthy.writeEnd)
            expected += "kept \(i)\n"
        }
        try await withTimeout(.seconds(30)) { await writer.flush() }
        #expect(writer.failure(of: closed.writeEnd) == String(cString: strerror(EPIPE)))
        #expect(writer.failure(of: healthy.writeEnd) == nil)
        closed.closeWriteEnd()
        #expect(String(decoding: closed.received, as: UTF8.self) == "first\n")
        #expect(try await finish(writer, healthy)[0] == expected)
    }

    /// A counting offer drops (and counts) what does not fit, never waiting; once room returns
    /// the notice comes with the count, before any newer line.
    @Test func countedDropsAreNoticedWithTheirCountBeforeNewerLines() async throws {
        let pipe = try TestPipe()
        let prefill = try pipe.fill()
        defer { pipe.startReading() }
        let writer = LineWriter(capacity: 64)
        let notice: @Sendable (Int) -> String = { "dropped \($0)\n" }
        var taken: [String] = [], drops = 0, i = 0
        while drops < 5 {
            let line = "line \(i)\n"
            if writer.offer(line, to: pipe.writeEnd, countingDropsAs: notice) { taken.append(line) } else { drops += 1 }
            i += 1
        }
        #expect(!taken.isEmpty && taken.joined().utf8.count <= 64 + "line 0\n".utf8.count)
        // A plain offer is refused too, and queues nothing.
        #expect(!writer.offer("plain\n", to: pipe.writeEnd))
        pipe.startReading()
        // Offer newer lines until one is taken; each refused one counts as dropped too.
        let clock = ContinuousClock(), deadline = clock.now + .seconds(60)  // room that never comes back: a hang guard
        var newest: String?
        var j = 0
        while newest == nil {
            let line = "late \(j)\n"
            if writer.offer(line, to: pipe.writeEnd, countingDropsAs: notice) { newest = line } else { drops += 1 }
            j += 1
            try #require(clock.now < deadline, "no room came back")
            try await Task.sleep(for: .milliseconds(1))  // room comes back as the reader's thread drains: wait for it, do not spin
        }
        let text = try await finish(writer, pipe)[0]
        #expect(text.prefix(prefill) == Substring(String(repeating: "f", count: prefill)))
        let lines = text.dropFirst(prefill).split(separator: "\n").map(String.init)
        try #require(lines.count >= taken.count + 2)
        #expect(Array(lines.prefix(taken.count)) == taken.map { String($0.dropLast()) })
        #expect(lines.last == newest.map { String($0.dropLast()) })
        // What lies between: notices only (more than one if room ran out again), adding up.
        let notices = lines.dropFirst(taken.count).dropLast()
        #expect(notices.allSatisfy { $0.hasPrefix("dropped ") })
        #expect(notices.compactMap { Int($0.dropFirst("dropped ".count)) }.reduce(0, +) == drops)
    }

    /// A line that would fit is still refused while earlier drops of its descriptor wait for
    /// their notice: the notice comes first.
    @Test func aLineThatWouldFitWaitsForTheNoticeOfEarlierDrops() async throws {
        let pipe = try TestPipe()
        let prefill = try pipe.fill()
        defer { pipe.startReading() }
        let writer = LineWriter(capacity: 64)
        // Longer than the room left (a notice that fits is queued at the next offer).
        let notice: @Sendable (Int) -> String = { "dropped \($0) lines: the reader was too slow\n" }
        let a = String(repeating: "a", count: 39) + "\n"  // 40 bytes: taken
        let b = String(repeating: "b", count: 29) + "\n"  // 30: no room
        let c = String(repeating: "c", count: 19) + "\n"  // 20: room, but a drop came first
        #expect(writer.offer(a, to: pipe.writeEnd, countingDropsAs: notice))
        #expect(!writer.offer(b, to: pipe.writeEnd, countingDropsAs: notice))
        #expect(!writer.offer(c, to: pipe.writeEnd, countingDropsAs: notice))
        // The flush waits for the notice too.
        let text = try await finish(writer, pipe)[0]
        #expect(text.prefix(prefill) == Substring(String(repeating: "f", count: prefill)))
        #expect(text.dropFirst(prefill) == Substring(a + notice(2)))
    }

    /// A `write` (or a plain `offer`) to a descriptor with counted drops comes after their
    /// notice, and so does a producer that began waiting after the drops: the CLI mixes both on
    /// stderr (`Console.printError` and `Console.log`). Before the notice waited in line with
    /// the producers, this gave `a, c, dropped 1`.
    @Test func aWriteAfterCountedDropsComesAfterTheirNotice() async throws {
        try await withProbe { probe in
            let pipe = try TestPipe()
            let prefill = try pipe.fill()
            defer { pipe.startReading() }
            let writer = LineWriter(capacity: 64)
            let notice: @Sendable (Int) -> String = { "dropped \($0)\n" }
            let a = String(repeating: "a", count: 39) + "\n"  // 40 bytes: taken
            let b = String(repeating: "b", count: 29) + "\n"  // 30: no room, dropped
            let c = String(repeating: "c", count: 19) + "\n"  // 20: written after the drop
            #expect(writer.offer(a, to: pipe.writeEnd, countingDropsAs: notice))
            #expect(!writer.offer(b, to: pipe.writeEnd, countingDropsAs: notice))
            let written = Flag()
            let writing = Task {
                await writer.write(c, to: pipe.writeEnd)
                written.set()
            }
            // Taken (what happens now) or waiting for the notice (what should), before any room returns.
            try await awaitState { written.isSet || someoneWaits(writer, probe: probe) }
            pipe.startReading()
            try await withTimeout(.seconds(10)) { await writing.value }
            let text = try await finish(writer, pipe)[0]
            #expect(text.prefix(prefill) == Substring(String(repeating: "f", count: prefill)))
            #expect(text.dropFirst(prefill) == Substring(a + "dropped 1\n" + c))
        }
    }

    /// One `write` a batch for a run of lines to one descriptor, and batches at most one a
    /// millisecond: a SOCK_SEQPACKET pair shows each write as one record.
    @Test func aRunOfLinesForOneDescriptorGoesOutInOneWriteAtMostOnceAMillisecond() async throws {
        let socket = try TestPipe(records: true)
        socket.startReading()
        let writer = LineWriter()
        let clock = ContinuousClock(), start = clock.now
        var expected = ""
        for i in 0..<2_000 {
            let line = "line \(i)\n"
            expected += line
            await writer.write(line, to: socket.writeEnd)
        }
        try await withTimeout(.seconds(30)) { await writer.flush() }
        let elapsed = clock.now - start
        try await socket.waitForBytes(expected.utf8.count)
        let writes = socket.readCount
        #expect(writes <= Int(elapsed / .milliseconds(1)) + 2, "\(writes) writes in \(elapsed)")
        #expect(try await finish(writer, socket)[0] == expected)
    }

    /// A line after a quiet spell (the writer thread asleep, or pacing) goes out at once, each
    /// time: a lost wake-up would leave it queued.
    @Test func aLoneLineAfterAQuietSpellArrivesPromptly() async throws {
        let pipe = try TestPipe()
        pipe.startReading()
        let writer = LineWriter()
        let clock = ContinuousClock()
        var total = 0, slowest = Duration.zero
        for round in 0..<100 {
            let line = "round \(round)\n"
            total += line.utf8.count
            let start = clock.now
            await writer.write(line, to: pipe.writeEnd)
            // Generous: the full test run shares two cores with other work (the pool stalled
            // for up to 4 s at a load average of 12); a lost wake-up leaves the line for ever.
            try await pipe.waitForBytes(total, upTo: .seconds(30))
            slowest = max(slowest, clock.now - start)
            // The quiet spell is the condition under test (nothing is ordered by it): none, or
            // long enough that the writer thread has gone to sleep.
            if round.isMultiple(of: 2) { try await Task.sleep(for: .milliseconds(3)) }
        }
        #expect(slowest < .seconds(30))
        #expect(try await finish(writer, pipe)[0] == (0..<100).map { "round \($0)\n" }.joined())
    }

    @Test func aPipeWhoseReaderLeftFailsWithBrokenPipeAtOnceWithoutAWrite() async throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[1]) }
        let writer = LineWriter()
        let failed = writer.failureSignal(of: ends[1])
        writer.watchReader(of: ends[1])
        #expect(failed.current == nil)
        close(ends[0])
        let code = try await withTimeout(.seconds(10)) { await failed.value }
        #expect(code == EPIPE)
        #expect(writer.failure(of: ends[1]) == String(cString: strerror(EPIPE)))
        // What follows for it is dropped, and the writer goes on.
        await writer.write("lost\n", to: ends[1])
        try await withTimeout(.seconds(10)) { await writer.flush() }
    }

    @Test func aFullDeviceFailsWithItsReasonAndSignalsItOnce() async throws {
        let full = open("/dev/full", O_WRONLY)
        #expect(full >= 0)
        defer { close(full) }
        let writer = LineWriter()
        let failed = writer.failureSignal(of: full)
        writer.watchReader(of: full)  // not a pipe: nothing to watch
        await writer.write("a\n", to: full)
        try await withTimeout(.seconds(10)) { await writer.flush() }
        #expect(failed.current == ENOSPC)
        #expect(writer.failure(of: full) == "No space left on device")
        // Asked after the failure, the signal has it already.
        #expect(writer.failureSignal(of: full).current == ENOSPC)
    }
}
