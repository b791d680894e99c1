/// A few threads for the short blocking calls that have no readiness form: name lookup,
/// binding, spawning a process, reading, hashing or removing files. Threads start as work
/// comes, at most `maxThreads`; work beyond waits its turn in order; a thread idle for
/// `idleExit` ends. So the number of threads does not grow with the number of links: ten
/// thousand links that each look up a name share these few.
///
/// Not for a call that blocks for as long as something lives (a keeper's life, a user's job):
/// it would hold a thread every other caller waits for. Those keep a thread of their own
/// (`onOwnThread`).
package final class BlockingPool: Sendable {
    /// The process's pool.
    package static let shared = BlockingPool(named: "skynet-blocking", maxThreads: 8)

    private struct State {
        /// Waiting jobs from `head` on (the taken ones before it are dropped in batches).
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        var threads = 0
        /// Threads running a job; the others wait for one.
        var busy = 0

        /// The first waiting job, now the caller's (busy); nil, with the caller's thread
        /// counted out, when none waits.
        mutating func takeJob() -> (@Sendable () -> Void)? {
            guard head < jobs.count else {
                threads -= 1
                return nil
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: jobs.count <= 64)
                head = 0
            } else if head >= 64, head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            busy += 1
            return job
        }
    }

    private let name: String
    private let maxThreads: Int
    private let idleExit: Duration
    private let state = Guarded(State())

    /// A pool whose threads are called `name`.
    package init(named name: String, maxThreads: Int, idleExit: Duration = .seconds(10)) {
        self.name = name
        self.maxThreads = max(1, maxThreads)
        self.idleExit = idleExit
    }

    /// Runs `job` on one of the pool's threads, after the jobs given before it.
    package func execute(_ job: @escaping @Sendable () -> Void) {
        let start = state.withLock { state -> Bool in
            state.jobs.append(job)
            guard state.threads - state.busy < state.jobs.count - state.head, state.threads < maxThreads else { return false }
            state.threads += 1
            return true
        }
        if start { startThread(named: name) { [self] in work() } }
    }

    /// Runs a short blocking call on one of the pool's threads and awaits its result.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            execute { continuation.resume(with: Result { try body() }) }
        }
    }

    /// The threads that are running now (for tests).
    package var threadCount: Int { state.withLock { $0.threads } }

    private func work() {
        while true {
            let job = state.wait(while: { $0.head == $0.jobs.count }, deadline: .now + idleExit) { state, _ in
                state.takeJob()
            }
            guard let job else { return }
            job()
            state.withLock { $0.busy -= 1 }
        }
    }
}

/// Runs a short blocking call on the process's `BlockingPool` and awaits its result.
package func onBlockingPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await BlockingPool.shared.run(body)
}
