@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// A system whose attempts are requests (`RequestingSystem`): it answers each started one from
/// the timer's thread, unless told to hold them, and declines every tenth task (input divisible
/// by 10), which the coordinator then runs with `run`.
actor RequestingPeer: RequestingSystem {
    nonisolated let name = "peer"
    nonisolated var isLocal: Bool { false }
    private let holds: Bool
    private let counts = Locked((started: 0, ran: 0, cancelled: 0))

    init(holds: Bool = false) { self.holds = holds }

    nonisolated func run(_ task: ScanTask) async throws -> String {
        counts.withLock { $0.ran += 1 }
        return "ran \(task.input)"
    }

    nonisolated func start(_ task: ScanTask, done: @escaping @Sendable (Result<String, any Error>) -> Void) -> (any StartedAttempt)? {
        guard task.input % 10 != 0 else { return nil }
        counts.withLock { $0.started += 1 }
        let attempt = HeldAttempt(done: done, counts: counts)
        if !holds {
            _ = DeadlineTimer.shared.schedule(at: .now + .microseconds(100)) { attempt.end(.success("answered \(task.input)")) }
        }
        return attempt
    }

    nonisolated var tally: (started: Int, ran: Int, cancelled: Int) { counts.withLock { $0 } }

    /// An attempt that ends once: answered, or stopped.
    final class HeldAttempt: StartedAttempt {
        private let done: Locked<(@Sendable (Result<String, any Error>) -> Void)?>
        private let counts: Locked<(started: Int, ran: Int, cancelled: Int)>

        init(done: @escaping @Sendable (Result<String, any Error>) -> Void, counts: Locked<(started: Int, ran: Int, cancelled: Int)>) {
            self.done = Locked(done)
            self.counts = counts
        }

        func end(_ result: Result<String, any Error>) {
            let done = done.withLock { done in
                defer { done = nil }
                return done
            }
            done?(result)
        }

        func cancel() {
            counts.withLock { $0.cancelled += 1 }
            end(.failure(CancellationError()))
        }
    }
}

extension CoordinatorTests {
    /// An attempt on a requesting system is its request: `run` is not called for it (no task
    /// waits for it); a task the system declines runs with `run`. Each result is kept.
    @Test func attemptsOnARequestingSystemAreItsRequestsAndADeclinedOneRuns() async throws {
        let peer = RequestingPeer()
        let systems = Systems()
        await systems.add(LocalSystem(name: "local", capacity: 0), capacity: 0)
        await systems.add(peer, capacity: 8)
        let log = EventLog()
        let report = await Coordinator(systems: systems) { log.append($0) }.run((0..<200).map { ScanTask(input: $0, duration: 0) })
        #expect(report.completed == 200)
        #expect(peer.tally.started == 180 && peer.tally.ran == 20, "\(peer.tally)")
        for input in 0..<200 {
            #expect(log.resultsByInput[input] == (input % 10 == 0 ? "ran \(input)" : "answered \(input)"))
        }
    }

    /// Stopping the scan stops every attempt it started on a requesting system; each counts as
    /// not run, and the scan returns.
    @Test func stoppingTheScanStopsEveryStartedRequest() async throws {
        let peer = RequestingPeer(holds: true)
        let systems = Systems()
        await systems.add(LocalSystem(name: "local", capacity: 0), capacity: 0)
        await systems.add(peer, capacity: 50)
        let tasks = (1...1_000).map { ScanTask(input: $0 * 10 + 1, duration: 0) }  // none declined
        let scan = Task { await Coordinator(systems: systems).run(tasks) }
        try await awaitState { peer.tally.started == 50 }
        scan.cancel()
        let report = await scan.value
        #expect(report.interrupted)
        #expect(report.completed == 0 && report.gaveUp == 0)
        #expect(peer.tally.started == 50 && peer.tally.cancelled == 50 && peer.tally.ran == 0, "\(peer.tally)")
    }
}
