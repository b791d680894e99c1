import CSkyNetPlatform
import Synchronization

/// What a watched descriptor is waited on for.
package struct Interest: OptionSet, Sendable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    package static let readable = Interest(rawValue: 1)
    package static let writable = Interest(rawValue: 2)
    /// Neither: watched for a hang-up or an error alone (epoll tells those whatever is asked).
    /// kqueue has no such watch: there it is like none.
    package static let hangUp = Interest(rawValue: 4)
}

/// What a watched descriptor is ready for; `hungUp`: the peer closed, or the descriptor failed
/// (a read or write then says which), whatever it was waited on for.
package struct Readiness: Sendable {
    package var readable = false
    package var writable = false
    package var hungUp = false
}

/// A readiness call that failed, with its errno.
package struct EventLoopError: Error, CustomStringConvertible, Sendable {
    package let code: Int32
    package let description: String

    init(_ operation: String, code: Int32 = errno) {
        self.code = code
        description = "\(operation): \(String(cString: strerror(code)))" + DescriptorLimit.hint(for: code)
    }
}

/// One thread that waits for many descriptors at once (epoll on Linux, kqueue on macOS) and
/// runs, on that thread, the handler of each that is ready, and the jobs given to it
/// (`execute`). Handlers and jobs must not block: every descriptor of the loop waits for them.
///
/// A handler runs only on its loop's thread, one at a time, so a descriptor's handler never
/// overlaps itself; `Watch.cancel` run on the loop's thread (in a handler or a job) means no
/// later call of the handler, so the descriptor may be closed right after it there.
package final class EventLoop: Sendable {
    /// The loops of this process: one per core, at most four, each made and started on first
    /// use. Descriptors are given to them in turn (`next`).
    package static let shared = Group(count: CoreCount.online(atMost: 4))

    /// A fixed number of loops, each made when its turn first comes.
    package final class Group: Sendable {
        package let count: Int
        private let state: Locked<(turn: Int, loops: [EventLoop?])>

        init(count: Int) {
            self.count = max(1, count)
            state = Locked((0, Array(repeating: nil, count: self.count)))
        }

        /// The loop whose turn it is; throws when it has to be made and cannot (the process is
        /// out of descriptors).
        package func next() throws(EventLoopError) -> EventLoop {
            try state.withLock { (state) throws(EventLoopError) -> EventLoop in
                let turn = state.turn
                if let loop = state.loops[turn] {
                    state.turn = (turn + 1) % count
                    return loop
                }
                let loop = try EventLoop(name: "skynet-loop-\(turn)")
                state.loops[turn] = loop
                state.turn = (turn + 1) % count
                return loop
            }
        }
    }

    private struct State {
        var handlers: [UInt64: @Sendable (Readiness) -> Void] = [:]
        var lastToken: UInt64 = 0
        var jobs: [@Sendable () -> Void] = []
        /// Jobs for the loop's next turn (`executeNextTurn`): they run after its next wait.
        var nextTurn: [@Sendable () -> Void] = []
        var started = false
    }

    private let name: String
    private let poller: Poller
    private let state = Locked(State())
    /// The loop thread's `pthread_self` as a number (a pointer on macOS, not `Sendable`); 0
    /// until it runs. Asked at every send (`isCurrent`), so not under the lock.
    private let thread = Atomic<UInt>(0)
    /// Where the loop's handlers read into: one buffer per loop rather than one per
    /// descriptor, since a loop runs one handler at a time.
    package let scratch = Scratch(byteCount: 64 * 1024)

    /// Bytes for the loop's handlers. Unchecked: only the loop's thread touches them, within one
    /// handler call or job (what they read is copied out before it returns).
    package final class Scratch: @unchecked Sendable {  // safe without a lock: only the loop's one thread touches it
        package let bytes: UnsafeMutableRawBufferPointer
        init(byteCount: Int) {
            bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 16)
        }
        deinit { bytes.deallocate() }
    }

    /// A loop whose thread starts with its first watch or job; throws without descriptors.
    init(name: String) throws(EventLoopError) {
        self.name = name
        poller = try Poller()
    }

    /// Watches `descriptor` for `interest`; `handler` runs on the loop's thread when it is
    /// ready. The caller keeps the descriptor open until the watch is cancelled.
    package func watch(_ descriptor: Int32, for interest: Interest,
                       _ handler: @escaping @Sendable (Readiness) -> Void) throws(EventLoopError) -> Watch {
        let token = state.withLock { state in
            state.lastToken += 1
            state.handlers[state.lastToken] = handler
            return state.lastToken
        }
        do {
            try poller.add(descriptor, token: token, interest: interest)
        } catch {
            state.withLock { _ = $0.handlers.removeValue(forKey: token) }
            throw error
        }
        startIfNeeded()
        return Watch(loop: self, descriptor: descriptor, token: token)
    }

    /// Whether the loop can watch `descriptor` (epoll refuses a regular file, and /dev/null):
    /// it is added and taken out again at once, under a token no handler has.
    package func canWatch(_ descriptor: Int32) -> Bool {
        do throws(EventLoopError) {
            try poller.add(descriptor, token: .max, interest: .writable)
        } catch {
            return false
        }
        poller.remove(descriptor)
        return true
    }

    /// Runs `job` on the loop's thread, after what it is running now.
    package func execute(_ job: @escaping @Sendable () -> Void) {
        let first = state.withLock { state in
            state.jobs.append(job)
            return state.jobs.count == 1
        }
        startIfNeeded()
        // Only the first job waiting wakes the loop: it takes them all at once. Its own thread
        // runs them before it waits again.
        if first, !isCurrent { poller.wake() }
    }

    /// Runs `job` on the loop's thread in its next turn: after it has waited for its
    /// descriptors again and run the handlers of those ready, so that a connection that yields
    /// lets the others of the loop go first. Call it on the loop's thread.
    package func executeNextTurn(_ job: @escaping @Sendable () -> Void) {
        state.withLock { $0.nextTurn.append(job) }
    }

    /// Whether jobs wait to run on the loop.
    package var hasJobs: Bool { state.withLock { !$0.jobs.isEmpty } }

    /// Whether the calling thread is this loop's.
    package var isCurrent: Bool {
        thread.load(ordering: .relaxed) == Self.currentThread
    }

    private static var currentThread: UInt {
        #if canImport(Glibc)
        UInt(pthread_self())
        #else
        UInt(bitPattern: pthread_self())
        #endif
    }

    /// A watched descriptor: what it is waited on for can change, and the watch can end.
    package struct Watch: Sendable {
        package let loop: EventLoop
        package let descriptor: Int32
        let token: UInt64

        /// Waits on the descriptor for `interest` from now on; none: nothing of it is told
        /// (not a hang-up either) until it is waited on again.
        /// False when the descriptor could not be waited on again (out of memory, or of the
        /// kernel's watches): nothing of it will be told, so the caller ends what it serves.
        @discardableResult
        package func change(to interest: Interest) -> Bool {
            loop.poller.change(descriptor, token: token, interest: interest)
        }

        /// Ends the watch: the handler is not called again once this returns on the loop's
        /// thread (elsewhere, a call already under way may still finish).
        package func cancel() {
            loop.poller.remove(descriptor)
            loop.state.withLock { _ = $0.handlers.removeValue(forKey: token) }
        }
    }

    private func startIfNeeded() {
        let start = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        if start { startThread(named: name) { [self] in run() } }
    }

    /// A task on the loop takes a round for each step after a suspension; a job that keeps
    /// giving jobs must not keep the descriptors waiting.
    static let jobRoundsPerTurn = 8

    /// The loop's thread: waits, runs the handlers of what is ready and the jobs given, again.
    private func run() {
        thread.store(Self.currentThread, ordering: .relaxed)
        var ready: [(token: UInt64, readiness: Readiness)] = []
        // The jobs taken in a round, and those carried to this turn: each is swapped with the
        // queue it empties and run from here, then emptied for the next swap. Copying a queue
        // out and emptying it in place would give the queue a new buffer at every round, as
        // large as the most it ever held, since the copy still shares the old one.
        var jobs: [@Sendable () -> Void] = [], carried: [@Sendable () -> Void] = []
        while true {
            ready.removeAll(keepingCapacity: true)
            let jobsWait = state.withLock { state in
                swap(&state.nextTurn, &carried)
                return state.jobs.isEmpty && carried.isEmpty
            }
            poller.wait(into: &ready, blocking: jobsWait)
            for (token, readiness) in ready {
                // Looked up for each: a handler before it may have cancelled this watch.
                guard let handler = state.withLock({ $0.handlers[token] }) else { continue }
                handler(readiness)
            }
            for job in carried { job() }
            carried.removeAll(keepingCapacity: true)
            // The jobs given meanwhile, and those they give (a task's next step, the sends of
            // this turn), a few rounds at most before the descriptors get their turn again.
            for _ in 0..<Self.jobRoundsPerTurn {
                state.withLock { swap(&$0.jobs, &jobs) }
                if jobs.isEmpty { break }
                for job in jobs { job() }
                jobs.removeAll(keepingCapacity: true)
            }
        }
    }
}

#if canImport(Glibc)
/// epoll, and an eventfd that wakes the wait for jobs (token 0).
private struct Poller: Sendable {
    let epoll: Int32
    let wakeUp: Int32

    init() throws(EventLoopError) {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw EventLoopError("epoll_create1") }
        wakeUp = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wakeUp >= 0 else {
            let error = EventLoopError("eventfd")
            close(epoll)
            throw error
        }
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: 0))
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, wakeUp, &event) == 0 else {
            let error = EventLoopError("epoll_ctl")
            close(epoll)
            close(wakeUp)
            throw error
        }
    }

    /// The peer's half-close only with reading: a watch paused for reading must not be woken
    /// again and again (level-triggered) by a hang-up it is not reading yet.
    private static func events(_ interest: Interest) -> UInt32 {
        var events: UInt32 = 0
        if interest.contains(.readable) { events |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if interest.contains(.writable) { events |= EPOLLOUT.rawValue }
        return events
    }

    func add(_ descriptor: Int32, token: UInt64, interest: Interest) throws(EventLoopError) {
        var event = epoll_event(events: Self.events(interest), data: epoll_data_t(u64: token))
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event) == 0 else { throw EventLoopError("epoll_ctl") }
    }

    /// No interest takes the descriptor out of the set: epoll tells a hang-up or an error
    /// whatever a descriptor is waited on for, again and again (level-triggered). `hangUp`
    /// keeps it in, waited on for nothing else.
    func change(_ descriptor: Int32, token: UInt64, interest: Interest) -> Bool {
        guard !interest.isEmpty else {
            remove(descriptor)
            return true
        }
        var event = epoll_event(events: Self.events(interest), data: epoll_data_t(u64: token))
        if epoll_ctl(epoll, EPOLL_CTL_MOD, descriptor, &event) == 0 { return true }
        return errno == ENOENT && epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event) == 0
    }

    func remove(_ descriptor: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, descriptor, &event)
    }

    func wake() {
        var one: UInt64 = 1
        _ = write(wakeUp, &one, 8)
    }

    func wait(into ready: inout [(token: UInt64, readiness: Readiness)], blocking: Bool) {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        let count = epoll_wait(epoll, &events, 64, blocking ? -1 : 0)
        guard count > 0 else { return }  // EINTR
        for event in events.prefix(Int(count)) {
            let token = event.data.u64
            if token == 0 {
                var value: UInt64 = 0
                _ = read(wakeUp, &value, 8)
                continue
            }
            let flags = event.events
            ready.append((token, Readiness(
                readable: flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0,
                writable: flags & (EPOLLOUT.rawValue | EPOLLERR.rawValue) != 0,
                hungUp: flags & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0)))
        }
    }
}
#else
/// kqueue, and a user event that wakes the wait for jobs (ident 0).
private struct Poller: Sendable {
    let queue: Int32

    init() throws(EventLoopError) {
        queue = kqueue()
        guard queue >= 0 else { throw EventLoopError("kqueue") }
        var event = kevent(ident: 0, filter: Int16(EVFILT_USER), flags: UInt16(EV_ADD | EV_CLEAR), fflags: 0, data: 0, udata: nil)
        guard kevent(queue, &event, 1, nil, 0, nil) == 0 else { throw EventLoopError("kevent") }
    }

    private func apply(_ descriptor: Int32, token: UInt64, interest: Interest) -> Int32 {
        let udata = UnsafeMutableRawPointer(bitPattern: UInt(token))
        var changes = [
            kevent(ident: UInt(descriptor), filter: Int16(EVFILT_READ),
                   flags: UInt16(interest.contains(.readable) ? EV_ADD | EV_ENABLE : EV_ADD | EV_DISABLE), fflags: 0, data: 0, udata: udata),
            kevent(ident: UInt(descriptor), filter: Int16(EVFILT_WRITE),
                   flags: UInt16(interest.contains(.writable) ? EV_ADD | EV_ENABLE : EV_ADD | EV_DISABLE), fflags: 0, data: 0, udata: udata),
        ]
        return kevent(queue, &changes, 2, nil, 0, nil)
    }

    func add(_ descriptor: Int32, token: UInt64, interest: Interest) throws(EventLoopError) {
        guard apply(descriptor, token: token, interest: interest) == 0 else { throw EventLoopError("kevent") }
    }

    func change(_ descriptor: Int32, token: UInt64, interest: Interest) -> Bool {
        apply(descriptor, token: token, interest: interest) == 0
    }

    func remove(_ descriptor: Int32) {
        var changes = [
            kevent(ident: UInt(descriptor), filter: Int16(EVFILT_READ), flags: UInt16(EV_DELETE), fflags: 0, data: 0, udata: nil),
            kevent(ident: UInt(descriptor), filter: Int16(EVFILT_WRITE), flags: UInt16(EV_DELETE), fflags: 0, data: 0, udata: nil),
        ]
        _ = kevent(queue, &changes, 2, nil, 0, nil)
    }

    func wake() {
        var event = kevent(ident: 0, filter: Int16(EVFILT_USER), flags: 0, fflags: UInt32(NOTE_TRIGGER), data: 0, udata: nil)
        _ = kevent(queue, &event, 1, nil, 0, nil)
    }

    func wait(into ready: inout [(token: UInt64, readiness: Readiness)], blocking: Bool) {
        var events = [kevent](repeating: kevent(), count: 64)
        var now = timespec()
        let count = blocking ? kevent(queue, nil, 0, &events, 64, nil) : kevent(queue, nil, 0, &events, 64, &now)
        guard count > 0 else { return }
        for event in events.prefix(Int(count)) where event.filter != Int16(EVFILT_USER) {
            let token = UInt64(UInt(bitPattern: event.udata))
            // EV_EOF is also a peer's half-close (epoll's EPOLLRDHUP): told as readable there,
            // as epoll tells it; only an error is a hang-up.
            let eof = event.flags & UInt16(EV_ERROR) != 0
            ready.append((token, Readiness(readable: event.filter == Int16(EVFILT_READ) || eof,
                                           writable: event.filter == Int16(EVFILT_WRITE), hungUp: eof)))
        }
    }
}
#endif

/// A loop runs tasks too: a task that prefers it (`Task(executorPreference:)`) runs on the
/// loop's thread between its handlers, and so does the code of default actors it calls, so
/// work that a handler starts and that answers on the same link crosses no thread. Only work
/// that waits belongs there: anything that computes holds every descriptor of the loop.
extension EventLoop: TaskExecutor {
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
