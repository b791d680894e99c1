import SkyNetRuntime

/// Bounds how many links of a scan start dialling at once, first come first served.
///
/// Ten thousand links that all dial at once each make their connect before any gets to its
/// hello: the pool runs their first steps in the order they came, and every connect's end
/// queues behind the connects still to start. No peer was up for 1.3 s, and the scan had no
/// slot to use meanwhile. With a few hundred dialling at a time, links come up from the first
/// moment, at the same rate, and the scan uses each as it comes.
///
/// A dial holds its place until it ends or for `patience`, whichever comes first: a host that
/// never answers (a connect that takes the whole timeout, a slow ssh login) holds the others
/// back by that much at most, not by its timeout. So the gate bounds how fast dials start, not
/// how many are under way: each of those is bounded by its own timeout. One timer serves the
/// whole gate, set only while dials wait (one per place cost a link 20–40 µs of the
/// coordinator's time, in timer wake-ups).
final class DialGate: Sendable {
    /// A place taken by `enter()`; `leave()` gives it back, unless its patience already did
    /// (leaving twice, or after the patience, does nothing).
    struct Place: Sendable {
        fileprivate let gate: DialGate
        fileprivate let number: UInt64

        func leave() { gate.release(number) }
    }

    private typealias Waiter = CheckedContinuation<UInt64?, Never>

    private struct State {
        /// The places held, by number, with when each was taken. Numbers grow with time, so
        /// `heldOrder` (which keeps the numbers of places since left until they reach its
        /// front) starts with the oldest.
        var held: [UInt64: ContinuousClock.Instant] = [:]
        var heldOrder = FIFO<UInt64>()
        var nextPlace: UInt64 = 0
        /// The dials waiting, by arrival number, in `waitOrder` (a cancelled one leaves its
        /// number behind, and admitting passes it by).
        var waiting: [UInt64: Waiter] = [:]
        var waitOrder = FIFO<UInt64>()
        var nextArrival: UInt64 = 0
        var expiryArmed = false

        mutating func take(at now: ContinuousClock.Instant) -> UInt64 {
            defer { nextPlace += 1 }
            held[nextPlace] = now
            heldOrder.append(nextPlace)
            return nextPlace
        }

        /// Forgets the places held for `patience` by `now`, and the numbers of places left.
        mutating func forget(heldFor patience: Duration, by now: ContinuousClock.Instant) {
            while let oldest = heldOrder.first {
                if let since = held[oldest] {
                    guard since + patience <= now else { return }
                    held[oldest] = nil
                }
                heldOrder.removeFirst()
            }
        }

        /// The oldest dial still waiting, given a place, while there is room.
        mutating func admit(limit: Int, at now: ContinuousClock.Instant) -> [(Waiter, UInt64)] {
            var admitted: [(Waiter, UInt64)] = []
            while held.count < limit, let number = waitOrder.first {
                waitOrder.removeFirst()
                if let waiter = waiting.removeValue(forKey: number) { admitted.append((waiter, take(at: now))) }
            }
            return admitted
        }

        /// When the oldest place runs out of patience, if a dial waits for it and no timer is
        /// set yet (the timer is then counted as set).
        mutating func expiry(after patience: Duration) -> ContinuousClock.Instant? {
            guard !expiryArmed, !waiting.isEmpty, let oldest = heldOrder.first, let since = held[oldest] else { return nil }
            expiryArmed = true
            return since + patience
        }
    }

    /// The places: dials that start at once. A place held for `patience` is free again, so
    /// more dials may be under way when some take that long (each bounded by its own timeout).
    let limit: Int
    let patience: Duration
    private let clock: any TimerClock
    private let state = Locked(State())

    init(limit: Int = 256, patience: Duration = .milliseconds(500), clock: any TimerClock) {
        self.limit = max(1, limit)
        self.patience = patience
        self.clock = clock
    }

    /// The dials waiting for a place now.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Waits for a place; nil, at once, when the calling task is cancelled (its link is
    /// stopping: it must not dial).
    func enter() async -> Place? {
        let arrival = state.withLock { state in
            defer { state.nextArrival += 1 }
            return state.nextArrival
        }
        let number = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Waiter) in
                let (immediate, expiry) = state.withLock { state -> (UInt64??, ContinuousClock.Instant?) in
                    if Task.isCancelled { return (.some(nil), nil) }
                    let now = clock.now
                    state.forget(heldFor: patience, by: now)
                    if state.held.count < limit && state.waiting.isEmpty { return (state.take(at: now), nil) }
                    state.waitOrder.append(arrival)
                    state.waiting[arrival] = continuation
                    return (nil, state.expiry(after: patience))
                }
                if let immediate { continuation.resume(returning: immediate) }
                if let expiry { clock.schedule(at: expiry) { [self] in expire() } }
            }
        } onCancel: {
            // The cancellation is set before this runs: a dial that parks after it sees it.
            state.withLock { $0.waiting.removeValue(forKey: arrival) }?.resume(returning: nil)
        }
        return number.map { Place(gate: self, number: $0) }
    }

    /// A place was left: the oldest dial still waiting takes it.
    fileprivate func release(_ number: UInt64) {
        let admitted = state.withLock { state -> [(Waiter, UInt64)] in
            guard state.held.removeValue(forKey: number) != nil else { return [] }
            let now = clock.now
            state.forget(heldFor: patience, by: now)
            return state.admit(limit: limit, at: now)
        }
        for (waiter, place) in admitted { waiter.resume(returning: place) }
    }

    /// The gate's timer: the places past their patience are free for the dials waiting.
    private func expire() {
        let (admitted, next) = state.withLock { state in
            state.expiryArmed = false
            let now = clock.now
            state.forget(heldFor: patience, by: now)
            return (state.admit(limit: limit, at: now), state.expiry(after: patience))
        }
        for (waiter, place) in admitted { waiter.resume(returning: place) }
        if let next { clock.schedule(at: next) { [self] in expire() } }
    }
}
