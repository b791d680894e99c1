import SkyNetTestSupport
import Testing
@testable import SkyNetRuntime

/// The queue under every clock, against a model (a list sorted by deadline, then by the order
/// scheduled): what is due leaves in that order, `firstDeadline` is the model's first, a
/// cancel says whether the entry was pending, and cancelled entries do not pile up. Deadlines
/// come in the shapes the product makes (runs of one delay from a moving now, as a link's time
/// limits and a node's sleeps; several delays interleaved; ties) and at random, so that both
/// the lanes and the heap are used.
@Suite struct TimerQueueTests {
    typealias Instant = ContinuousClock.Instant

    /// The model: pending labels with their deadlines, in the order they must leave.
    struct Model {
        var pending: [(deadline: Instant, label: Int)] = []

        mutating func insert(_ deadline: Instant, _ label: Int) {
            // After every entry not later: ties leave in the order scheduled.
            let index = pending.firstIndex { $0.deadline > deadline } ?? pending.count
            pending.insert((deadline, label), at: index)
        }

        mutating func remove(_ label: Int) -> Bool {
            guard let index = pending.firstIndex(where: { $0.label == label }) else { return false }
            pending.remove(at: index)
            return true
        }
    }

    final class Ran: Sendable {
        let labels = Locked<[Int]>([])
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func entriesLeaveInDeadlineOrderThenScheduleOrderWhateverShapeTheirDeadlinesCameIn(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var queue = TimerQueue(), model = Model()
        let start = ContinuousClock.now
        var now = start
        var tickets: [(label: Int, ticket: TimerTicket)] = []
        let ran = Ran()
        // Up to 12 delays in use (more than the lanes), each from a moving now.
        let delays = (0..<Int.random(in: 1...12, using: &random)).map { _ in Duration.milliseconds(Int.random(in: 0...5_000, using: &random)) }
        for label in 0..<20_000 {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<55:
                let deadline: Instant = switch Int.random(in: 0..<10, using: &random) {
                case 0: start + .milliseconds(Int.random(in: 0...10_000, using: &random))  // anywhere
                case 1: model.pending.last?.deadline ?? now  // a tie
                default: now + delays[Int.random(in: 0..<delays.count, using: &random)]
                }
                tickets.append((label, queue.insert(at: deadline) { ran.labels.withLock { $0.append(label) } }))
                model.insert(deadline, label)
            case 55..<75 where !tickets.isEmpty:
                // Mostly a pending one; sometimes one that already left.
                let (label, ticket) = tickets.remove(at: Int.random(in: 0..<tickets.count, using: &random))
                let cancelled = queue.remove(ticket), again = queue.remove(ticket)
                #expect(cancelled == model.remove(label), "cancel of \(label)")
                #expect(!again, "a second cancel of \(label)")
            default:
                now += .microseconds(Int.random(in: 0...2_000, using: &random))
                var left: [Int] = []
                while let due = queue.popFirst(dueAt: now) {
                    due.action()
                    left.append(ran.labels.withLock { $0.last ?? -1 })
                    #expect(due.deadline <= now)
                }
                var expected: [Int] = []
                while let first = model.pending.first, first.deadline <= now {
                    expected.append(first.label)
                    model.pending.removeFirst()
                }
                #expect(left == expected, "due at \(now - start)")
            }
            #expect(queue.firstDeadline == model.pending.first?.deadline)
            if label.isMultiple(of: 1_000) {
                #expect(queue.deadlines == model.pending.map(\.deadline))
            }
        }
        // The rest leaves in order.
        var rest: [Int] = []
        while let due = queue.popFirst(dueAt: start + .seconds(3_600)) {
            due.action()
            rest.append(ran.labels.withLock { $0.last ?? -1 })
        }
        #expect(rest == model.pending.map(\.label))
        #expect(queue.firstDeadline == nil && queue.deadlines.isEmpty)
        #expect(queue.storedCount == 0)
    }

    /// A link's time limits: one delay, nearly all cancelled by their replies, out of order,
    /// while one request hangs at the front. The cancelled ones are not kept for its sake.
    @Test func cancelledEntriesBehindAPendingOneAreNotKeptWithoutBound() {
        var queue = TimerQueue()
        let start = ContinuousClock.now
        let hung = queue.insert(at: start + .seconds(5)) {}
        var live: [TimerTicket] = []
        var mostOver = Int.min  // the most stored beyond the bound
        for index in 1...100_000 {
            live.append(queue.insert(at: start + .seconds(5) + .microseconds(index)) {})
            if live.count > 8 {
                let removed = queue.remove(live.remove(at: live.count - 3))
                #expect(removed)
            }
            mostOver = max(mostOver, queue.storedCount - (2 * (live.count + 1) + 1_026))
        }
        #expect(mostOver <= 0, "stored \(mostOver) beyond twice the pending and a lane's slack")
        #expect(queue.deadlines.count == live.count + 1)
        let removed = [queue.remove(hung)] + live.map { queue.remove($0) }
        #expect(removed.allSatisfy { $0 })
        #expect(queue.storedCount == 0)
        #expect(queue.firstDeadline == nil)
    }

    /// A ticket is its own queue's: another queue neither takes it out nor says it did, and the
    /// entry still runs where it was scheduled.
    @Test func aTicketOfAnotherQueueIsNotCancelledThere() {
        var mine = TimerQueue(), other = TimerQueue()
        let start = ContinuousClock.now
        let ran = Ran()
        let tickets = (0..<3).map { index in mine.insert(at: start + .milliseconds(index)) { ran.labels.withLock { $0.append(index) } } }
        _ = other.insert(at: start) {}
        let taken = tickets.map { other.remove($0) }
        #expect(taken == [false, false, false])
        while let due = mine.popFirst(dueAt: start + .seconds(1)) { due.action() }
        #expect(ran.labels.withLock { $0 } == [0, 1, 2])
        #expect(other.storedCount == 1)
    }

    /// Deadlines that each come earlier than the last fit no lane after the first few: the heap
    /// takes them, in order all the same.
    @Test func deadlinesThatComeLatestFirstLeaveEarliestFirst() {
        var queue = TimerQueue()
        let start = ContinuousClock.now
        let ran = Ran()
        for index in (0..<5_000).reversed() {
            _ = queue.insert(at: start + .microseconds(index)) { ran.labels.withLock { $0.append(index) } }
        }
        #expect(queue.firstDeadline == start)
        while let due = queue.popFirst(dueAt: start + .seconds(1)) { due.action() }
        #expect(ran.labels.withLock { $0 } == Array(0..<5_000))
        #expect(queue.storedCount == 0)
    }
}
