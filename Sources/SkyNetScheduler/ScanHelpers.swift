import SkyNetRuntime
import Synchronization

/// The helpers a scan starts (its attempts, its parked slot requests, its slots' rests), each
/// of which reports one `Step` back to the scan's loop. Each is a task, except an attempt on
/// a peer (`RequestingSystem`): that is a request and its callback.
///
/// The tasks are not children of a task group: the runtime finds a child that ended by walking
/// the group's list of children past every older one still running, and with 40,000 attempts
/// in flight (W15's 10,000 nodes) that walk took a fifth of the loop's time. What the group
/// gave is kept here: the loop cancels every helper with the scan (`cancelAll`, also those
/// started after), and returns only once each has reported (`outstanding`).
final class ScanHelpers: Sendable {
    /// A helper that has not reported, and how to stop it.
    private enum Helper {
        case task(Task<Void, Never>)
        case request(any StartedAttempt)

        func cancel() {
            switch self {
            case .task(let task): task.cancel()
            case .request(let request): request.cancel()
            }
        }
    }

    private struct State {
        /// Reported and not yet taken, in the order they came.
        var steps: [Step] = []
        var waiter: UnsafeContinuation<[Step], Never>?
        /// The helpers that have not reported, by number.
        var running: [Int: Helper] = [:]
        /// Helpers that reported before they were recorded in `running`.
        var reportedFirst: Set<Int> = []
        var cancelled = false

        mutating func takeSteps() -> [Step]? {
            guard !steps.isEmpty else { return nil }
            defer { steps = [] }
            return steps
        }
    }

    private let state = Locked(State())
    private let lastNumber = Atomic(0)

    /// Helpers whose step the loop has not taken: `take` returns while this is above 0.
    var outstanding: Int { state.withLock { $0.running.count + $0.steps.count } }

    /// Starts `helper` on `executor` (the pool when nil); what it returns goes to `take`.
    ///
    /// Called only by the scan's loop: `outstanding` counts the helper from when this returns.
    func start(on executor: (any TaskExecutor)? = nil, _ helper: @escaping @Sendable () async -> Step) {
        let number = lastNumber.add(1, ordering: .relaxed).newValue
        let task = Task(executorPreference: executor) { [self] in
            // Started after `cancelAll`, it may run before `cancel` below reaches it: it is
            // cancelled first, as a child added to a cancelled group starts (an attempt then
            // sends no request).
            if state.withLock({ $0.cancelled }) { withUnsafeCurrentTask { $0?.cancel() } }
            report(await helper(), from: number)
        }
        record(.task(task), number: number)
    }

    /// Starts a helper that is no task: `begin` starts it and returns how to stop it, and it
    /// calls `report` once with its step. False, with nothing started, when `begin` returns nil
    /// or the helpers were cancelled (a helper started then goes as a task: it starts cancelled).
    ///
    /// Called only by the scan's loop, as `start` is.
    func start(_ begin: (_ report: @escaping @Sendable (Step) -> Void) -> (any StartedAttempt)?) -> Bool {
        guard !state.withLock({ $0.cancelled }) else { return false }
        let number = lastNumber.add(1, ordering: .relaxed).newValue
        guard let request = begin({ [self] step in report(step, from: number) }) else { return false }
        record(.request(request), number: number)
        return true
    }

    /// Counts helper `number` as running until it reports (unless it reported already), and
    /// stops it at once if the helpers were cancelled meanwhile.
    private func record(_ helper: Helper, number: Int) {
        let cancelled = state.withLock { state in
            if state.reportedFirst.remove(number) == nil { state.running[number] = helper }
            return state.cancelled
        }
        if cancelled { helper.cancel() }
    }

    /// The steps reported since the last call, in the order they came; waits for one when none
    /// has. Only while `outstanding` is above 0: else nothing would ever come.
    func take() async -> [Step] {
        if let ready = state.withLock({ $0.takeSteps() }) { return ready }
        return await withUnsafeContinuation { continuation in
            let ready = state.withLock { state in
                let ready = state.takeSteps()
                if ready == nil { state.waiter = continuation }
                return ready
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Cancels every helper still running, and each one started from now on.
    func cancelAll() {
        let running = state.withLock { state in
            state.cancelled = true
            return Array(state.running.values)
        }
        // Outside the lock: a cancellation handler runs here, and may post a line, resume a
        // task or report a step.
        for helper in running { helper.cancel() }
    }

    private func report(_ step: Step, from number: Int) {
        let (waiter, steps) = state.withLock { state -> (UnsafeContinuation<[Step], Never>?, [Step]?) in
            if state.running.removeValue(forKey: number) == nil { state.reportedFirst.insert(number) }
            state.steps.append(step)
            guard let waiter = state.waiter else { return (nil, nil) }
            state.waiter = nil
            return (waiter, state.takeSteps())
        }
        if let waiter, let steps { waiter.resume(returning: steps) }
    }
}
