import SkyNetWork

/// A slot on one system, reserved by `Systems`. Give it back with `Systems.release(_:)`.
package struct Reservation: Sendable {
    package let system: any ScanSystem
    /// Which registration of the system the slot belongs to (a replaced system's slots are
    /// released into nothing).
    fileprivate let entryID: UInt64

    package var name: String { system.name }
}

/// One system's slots at a moment (`Systems.slotUse`).
package struct SlotUse: Sendable, Equatable {
    package let name: String
    package let capacity: Int
    /// Tasks running there (sent to it, as far as this coordinator knows): at most `capacity`.
    package let inFlight: Int
    /// Tasks sent to it beyond its capacity, waiting in line at the node for a slot.
    package let waiting: Int
    /// Held back from new work until it answers a ping.
    package let suspended: Bool
    /// Given no new work: it drains.
    package let draining: Bool

    package init(name: String, capacity: Int, inFlight: Int, waiting: Int = 0, suspended: Bool, draining: Bool = false) {
        self.name = name
        self.capacity = capacity
        self.inFlight = inFlight
        self.waiting = waiting
        self.suspended = suspended
        self.draining = draining
    }
}

/// The registry of systems a coordinator hands work to: its local system first, then peers.
///
/// It owns the slot counts, so checking for a free slot and taking it is one synchronous
/// step. A peer whose node holds a line of waiting scans (`queue`) is also given up to that
/// many more, each its slot's next task, but only when no system has a slot free, while the
/// coordinator still has a task for every slot to hand out, and at most `maxInLines` over all
/// peers. Callers that find no free slot wait in line and are woken when one frees or a system
/// joins; nobody polls.
public actor Systems {
    /// The name of a coordinator's own system, which a report lists first.
    public static let localName = "local"

    private struct Entry {
        let id: UInt64
        /// `Departed.system` once removed: a removed peer's link is not kept alive by its place.
        var system: any ScanSystem
        var capacity: Int
        /// How many more than `capacity` it takes, to wait in line at the node.
        var queue: Int
        var inFlight = 0
        /// A peer that stopped answering gets no new work until it answers again.
        var suspended = false
        /// A peer that said it drains (it is stopping) gets no new work, for good.
        var draining = false
        /// Removed, and kept in its place until the list is compacted.
        var removed: Bool { system === Departed.system }
        var isFree: Bool { !suspended && !draining && !removed && inFlight < capacity }
        var hasRoomInLine: Bool { !suspended && !draining && !removed && inFlight < capacity + queue }
    }

    private struct Waiter {
        let id: UInt64
        let localOnly: Bool
        let continuation: CheckedContinuation<Reservation, any Error>
    }

    /// The systems in order: local ones (`localCount`) first, then peers. A removed system
    /// stays in its place (`removed`) until they are over half of the list: closing ten
    /// thousand links then moves each entry a few times, not once for every link before it.
    private var entries: [Entry] = []
    private var localCount = 0
    private var removedCount = 0
    /// Where each entry is in `entries`, by registration and by name; and which entries may
    /// take work now (`offerable`), so that finding the first free slot, or the system a
    /// reply names, is not a walk over ten thousand systems. Kept with every change of an
    /// entry (`refresh`), insert or removal (`reindex`).
    private var positionByID: [UInt64: Int] = [:]
    private var positionByName: [String: Int] = [:]
    private var offerable = BitSet()
    /// Which entries may take a task to wait in line at their node now.
    private var lineOfferable = BitSet()
    /// The tasks given to systems beyond their capacity: waiting in their nodes' lines.
    private var inLines = 0
    /// The most tasks that wait in nodes' lines at once. A line hides a task's round trip
    /// from its slot, which matters for tasks of milliseconds; each waiting task holds a
    /// request here and a task at its node, which for ten thousand nodes of long tasks would
    /// double the memory of a scan and gain nothing.
    package static let maxInLines = 1024
    /// How many tasks the coordinator still has to hand out, as it last said (less those that
    /// reservations were made for since, waiters' included). Lines are offered only while that
    /// is at least `slotCount`: then every slot takes another task anyway, and one sent ahead
    /// only hides its round trip. With fewer, a task in one node's line could wait a whole task
    /// for its slot while a slot of another node frees and stays idle (at the end of a scan of
    /// long tasks, a second each).
    private var backlog = Int.max
    /// The slots of the systems present, together.
    private var slotCount = 0
    private var waiters: [Waiter] = []
    /// Callers of `idle(named:)`, each waiting for its system to have no slot reserved.
    private var idleWaiters: [(id: UInt64, name: String, continuation: CheckedContinuation<Void, Never>)] = []
    /// Members of address groups that left DNS, by name: no new work while they
    /// drain, also on a link that redials and registers again; a reason apart from `draining`,
    /// so that an address that returns never un-drains a node that is stopping.
    private var leaving: Set<String> = []
    private var lastID: UInt64 = 0
    /// The most slots ever reserved at once on each system, by name: a witness for tests.
    package private(set) var highWater: [String: Int] = [:]
    /// The name of every system ever added with a slot, also one gone since: the systems that
    /// took part, which a scan's summary lists even when they completed nothing.
    package private(set) var joinedNames: Set<String> = []

    /// An empty registry: add this process's system first, then peers (or give it to `PeerLinks`).
    public init() {}

    /// The names of the systems, in the order `reserve()` walks them.
    public var names: [String] { present.map(\.system.name) }

    /// Slots reserved right now on the system called `name` (0 when there is none).
    package func inFlight(on name: String) -> Int {
        positionByName[name].map { entries[$0].inFlight } ?? 0
    }

    /// Every system's slots right now, in order: what a live view shows.
    package var slotUse: [SlotUse] {
        present.map {
            SlotUse(name: $0.system.name, capacity: $0.capacity, inFlight: min($0.inFlight, $0.capacity),
                    waiting: max(0, $0.inFlight - $0.capacity), suspended: $0.suspended,
                    draining: $0.draining || leaving.contains($0.system.name))
        }
    }

    /// How many callers wait in line for a slot: lets tests await a waiter instead of sleeping.
    package var waiterCount: Int { waiters.count }
    /// How many callers wait in `idle(named:)`: lets tests await one instead of sleeping.
    package var idleWaiterCount: Int { idleWaiters.count }

    /// The slots of the local systems together.
    package var localCapacity: Int { entries.prefix(localCount).reduce(0) { $0 + ($1.removed ? 0 : $1.capacity) } }

    /// The systems not removed, in order.
    private var present: [Entry] { entries.filter { !$0.removed } }

    /// Adds a system with `capacity` slots; one with the same name is replaced in place (or,
    /// when one is local and the other not, where the new one's kind goes).
    /// Local systems go before peers. A peer that said it drains before it was added (a node
    /// stopping when it welcomed us) is added `draining`, in the same step: it is never offered work.
    public func add(_ system: any ScanSystem, capacity: Int, draining: Bool = false) {
        add(system, capacity: capacity, queue: 0, draining: draining)
    }

    /// Adds a system as `add(_:capacity:draining:)` does, with `queue` tasks more than its
    /// capacity that may wait in line at its node.
    package func add(_ system: any ScanSystem, capacity: Int, queue: Int, draining: Bool = false) {
        let entry = Entry(id: nextID(), system: system, capacity: max(0, capacity), queue: max(0, queue), draining: draining)
        if capacity > 0 { joinedNames.insert(system.name) }
        if let index = positionByName[system.name], entries[index].system.isLocal != system.isLocal {
            // Of the other kind: it moves to where its kind goes.
            removeEntry(at: index)
        }
        if let index = positionByName[system.name] {
            positionByID[entries[index].id] = nil
            inLines -= excess(entries[index])  // its reservations are released into nothing
            slotCount -= entries[index].capacity
            entries[index] = entry
            positionByID[entry.id] = index
            refresh(at: index)
        } else if system.isLocal {
            entries.insert(entry, at: localCount)
            localCount += 1
            reindex(from: localCount - 1)
        } else {
            entries.append(entry)
            reindex(from: entries.count - 1)
        }
        slotCount += entry.capacity
        serveWaiters()
        resumeIdleWaiters()
    }

    /// Removes the system called `name`; slots reserved on it are released into nothing.
    package func remove(named name: String) {
        if let index = positionByName[name] { removeEntry(at: index) }
        serveWaiters()  // its place in the lines is free for another's
        resumeIdleWaiters()
    }

    /// Holds back new work from the system called `name` (`suspended`), or gives it work again.
    package func setSuspended(_ suspended: Bool, named name: String) {
        guard let index = positionByName[name] else { return }
        entries[index].suspended = suspended
        refresh(at: index)
        if !suspended { serveWaiters() }
    }

    /// Gives the system called `name` no new work: it said it drains. (`false` is
    /// for tests: a node that stops never takes work again.)
    package func setDraining(_ draining: Bool, named name: String) {
        guard let index = positionByName[name] else { return }
        entries[index].draining = draining
        refresh(at: index)
        if !draining { serveWaiters() }
    }

    /// Marks the member `name` of an address group as leaving (its address left DNS), or takes
    /// the mark back (it returned). Returns whether that changes what it is seen to do: it is
    /// here and not draining on its own (so `Draining` or its return is worth saying).
    @discardableResult
    package func setLeaving(_ isLeaving: Bool, named name: String) -> Bool {
        let changed = isLeaving ? leaving.insert(name).inserted : leaving.remove(name) != nil
        guard changed, let index = positionByName[name] else { return false }
        refresh(at: index)
        if !isLeaving { serveWaiters() }
        return !entries[index].draining
    }

    /// Drops the leaving mark of a member whose leave is over, unless a system of that name is
    /// here again (its address returned, and left again, meanwhile): the marks of members gone
    /// for good do not pile up.
    package func forgetLeaving(named name: String) {
        guard positionByName[name] == nil else { return }
        leaving.remove(name)
    }

    /// Returns once the system called `name` has no slot reserved, or is gone (also at once).
    /// A cancelled caller returns at once.
    package func idle(named name: String) async {
        guard isBusy(name) else { return }
        let id = nextID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Cancelled already: `onCancel`'s removal may have run before this append.
                if Task.isCancelled { return continuation.resume() }
                idleWaiters.append((id, name, continuation))
            }
        } onCancel: {
            Task { await self.cancelIdleWaiter(id) }
        }
    }

    private func cancelIdleWaiter(_ id: UInt64) {
        guard let index = idleWaiters.firstIndex(where: { $0.id == id }) else { return }
        idleWaiters.remove(at: index).continuation.resume()
    }

    /// Resumes the `idle` callers whose system has no slot reserved any more, or is gone.
    private func resumeIdleWaiters() {
        guard !idleWaiters.isEmpty else { return }
        let (done, waiting) = (idleWaiters.filter { !isBusy($0.name) }, idleWaiters.filter { isBusy($0.name) })
        idleWaiters = waiting
        for waiter in done { waiter.continuation.resume() }
    }

    /// Whether the system called `name` is here with a slot reserved.
    private func isBusy(_ name: String) -> Bool {
        positionByName[name].map { entries[$0].inFlight > 0 } ?? false
    }

    /// Removes the system a reservation was made on, if that registration is still there: for
    /// a peer found gone, before its link has noticed.
    package func retire(_ reservation: Reservation) {
        if let index = positionByID[reservation.entryID] { removeEntry(at: index) }
        serveWaiters()
        resumeIdleWaiters()
    }

    /// Reserves a slot at once, or returns nil when no system (local: no local system) has one.
    /// `backlog`: how many tasks the caller still has to hand out, this one included (it
    /// decides whether a node's line is offered, also to later waiters); nil keeps the last.
    package func tryReserve(localOnly: Bool = false, backlog: Int? = nil) -> Reservation? {
        if let backlog { self.backlog = backlog }
        guard let index = firstOffer(localOnly: localOnly) else { return nil }
        if entries[index].inFlight >= entries[index].capacity { inLines += 1 }
        entries[index].inFlight += 1
        if self.backlog < .max { self.backlog = max(0, self.backlog - 1) }  // the task this slot is for is out of it
        refresh(at: index)
        let entry = entries[index]
        highWater[entry.system.name] = max(highWater[entry.system.name] ?? 0, entry.inFlight)
        return Reservation(system: entry.system, entryID: entry.id)
    }

    /// Gives a slot back and wakes whoever waits for it.
    package func release(_ reservation: Reservation) {
        guard let index = positionByID[reservation.entryID] else { return }
        giveBack(at: index)
        refresh(at: index)
        serveWaiters()
        resumeIdleWaiters()
    }

    /// Gives a slot back and, in the same step, reserves the first free slot (local only,
    /// when asked) for the caller's next piece of work, before any waiter is served: a slot
    /// that frees goes straight to the next task, with no waiter woken to pass it on. Nil when
    /// none is free; waiters are served with what is left. `backlog` as for `tryReserve`.
    package func release(_ reservation: Reservation, reservingAgain localOnly: Bool, backlog: Int? = nil) -> Reservation? {
        if let backlog { self.backlog = backlog }
        if let index = positionByID[reservation.entryID] {
            giveBack(at: index)
            refresh(at: index)
        }
        let again = tryReserve(localOnly: localOnly)
        serveWaiters()
        resumeIdleWaiters()
        return again
    }

    /// Reserves a slot on the first system, in order, that has one free (local: on the local
    /// system); waits in line until one frees when none has. Waiters for a local slot are
    /// served before waiters for any slot (re-runs go first). Throws `CancellationError` when
    /// the caller is cancelled.
    package func reserve(localOnly: Bool = false) async throws -> Reservation {
        if let reservation = tryReserve(localOnly: localOnly) { return reservation }
        let id = nextID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiters.append(Waiter(id: id, localOnly: localOnly, continuation: continuation))
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    private func cancelWaiter(_ id: UInt64) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: index).continuation.resume(throwing: CancellationError())
    }

    /// Hands free slots to waiters: local-only waiters first, then the rest, each in order.
    private func serveWaiters() {
        for localPass in [true, false] {
            var index = 0
            while index < waiters.count, firstOffer(localOnly: localPass) != nil {
                let waiter = waiters[index]
                if waiter.localOnly == localPass, let reservation = tryReserve(localOnly: waiter.localOnly) {
                    waiters.remove(at: index)
                    waiter.continuation.resume(returning: reservation)
                } else {
                    index += 1
                }
            }
        }
    }

    /// The first system, in order, with a slot free; when none has, the first with room in its
    /// node's line (never for `localOnly`: a local system runs what it takes at once), while
    /// the backlog has a task for every slot.
    private func firstOffer(localOnly: Bool) -> Int? {
        if localOnly { return offerable.first(below: localCount) }
        if let index = offerable.first(below: entries.count) { return index }
        guard inLines < Self.maxInLines, backlog >= slotCount else { return nil }
        return lineOfferable.first(below: entries.count)
    }

    /// How many of the entry's tasks wait in its node's line.
    private func excess(_ entry: Entry) -> Int { max(0, entry.inFlight - entry.capacity) }

    /// One of the entry's reservations comes back: from its line first.
    private func giveBack(at index: Int) {
        if entries[index].inFlight > entries[index].capacity { inLines -= 1 }
        entries[index].inFlight -= 1
    }

    /// Removes the entry at `index`, its slots released into nothing.
    private func removeEntry(at index: Int) {
        inLines -= excess(entries[index])
        slotCount -= entries[index].capacity
        positionByID[entries[index].id] = nil
        positionByName[entries[index].system.name] = nil
        entries[index].system = Departed.system
        refresh(at: index)
        removedCount += 1
        if removedCount > 64, removedCount * 2 > entries.count { compact() }
    }

    /// Takes the removed entries out of the list.
    private func compact() {
        localCount -= entries.prefix(localCount).count { $0.removed }
        entries.removeAll { $0.removed }
        removedCount = 0
        reindex(from: 0)
    }

    /// The positions and offers of the entries from `index` on, after an insert or a compaction
    /// moved them (or an append added one).
    private func reindex(from index: Int) {
        for position in index..<entries.count {
            if !entries[position].removed {  // a removed one is no longer found, and never offered
                positionByID[entries[position].id] = position
                positionByName[entries[position].system.name] = position
            }
            refresh(at: position)
        }
        offerable.clear(from: entries.count)
        lineOfferable.clear(from: entries.count)
    }

    /// Whether the entry at `index` is offered work now (a free slot, or room in its node's
    /// line), and not leaving.
    private func refresh(at index: Int) {
        let entry = entries[index]
        let staying = leaving.isEmpty || !leaving.contains(entry.system.name)
        offerable.set(index, entry.isFree && staying)
        lineOfferable.set(index, entry.queue > 0 && entry.hasRoomInLine && staying)
    }

    private func nextID() -> UInt64 {
        lastID += 1
        return lastID
    }
}

/// A set of small integers as bits: which entries of `Systems` may take work, with the first
/// of them found a word (64 entries) at a time.
private struct BitSet {
    private var words: [UInt64] = []

    mutating func set(_ index: Int, _ isMember: Bool) {
        let word = index >> 6, bit = UInt64(1) << UInt64(index & 63)
        if isMember {
            while words.count <= word { words.append(0) }
            words[word] |= bit
        } else if word < words.count {
            words[word] &= ~bit
        }
    }

    /// The smallest member, if it is below `limit`.
    func first(below limit: Int) -> Int? {
        for (index, word) in words.enumerated() where word != 0 {
            let first = index << 6 + word.trailingZeroBitCount
            return first < limit ? first : nil
        }
        return nil
    }

    /// Takes out every member from `index` on.
    mutating func clear(from index: Int) {
        let word = index >> 6
        guard word < words.count else { return }
        words[word] &= (UInt64(1) << UInt64(index & 63)) &- 1
        words.removeSubrange((word + 1)...)
    }
}

/// What a removed system's place holds until the list is compacted: never offered work.
private actor Departed: ScanSystem {
    static let system = Departed()
    nonisolated var name: String { "" }
    nonisolated var isLocal: Bool { false }
    func run(_ task: ScanTask) async throws -> String { throw CancellationError() }
}
