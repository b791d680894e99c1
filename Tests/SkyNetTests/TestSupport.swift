import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
@testable import SkyNetWork

/// A one-way signal between tasks, awaited with a bound.
final class Flag: Sendable {
    private let signal = AsyncSignal<Void>()
    var isSet: Bool { signal.current != nil }
    func set() { signal.fulfil(()) }

    /// Waits until set; throws after `limit`.
    func wait(upTo limit: Duration) async throws {
        let signal = self.signal
        try await withTimeout(limit) { await signal.value }
    }
}

/// A count shared between tasks, awaited with a bound.
final class Counter: Sendable {
    private let count = Watched(0)
    var value: Int { count.value }
    func increment() { count.update { $0 += 1 } }

    /// Returns once the count is at least `target`; throws after `limit`.
    func wait(untilAtLeast target: Int, upTo limit: Duration = .seconds(30)) async throws {
        try await count.wait(upTo: limit) { $0 >= target }
    }
}

/// Whether ThreadSanitizer watches this process: there work that computes runs many times
/// slower, and the heaviest tests do a fraction of it (what they check stays the same).
let underThreadSanitizer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

/// How often `awaitState` and the other polls of the tests look again.
let pollInterval: Duration = .milliseconds(5)

/// Polls until `condition` holds; throws after `limit`. Only for state that the code under
/// test holds and offers no signal for (a node's connection count, a registry's waiters, a
/// count a node reports over the wire). State the test owns is awaited without polling: a
/// `Flag`, or a `Watched` value (`Counter`, `EventLog`, `LogLines` and `FakeNode` use one).
/// Between looks it sleeps `pollInterval` (a real suspension): a loop of `Task.yield()` kept a
/// thread of the cooperative pool (two threads on a two-core machine) busy while the suites
/// run in parallel, and under the thread sanitizer starved the very work it waited for.
///
/// The default limits of this and the other waits of the tests (`waitForCompletions`,
/// `waitForBytes`, `waitFor`) are hang guards for a state that a wrong implementation never
/// reaches, not measures of speed: 30 s, for a thread-sanitizer run beside five others on two
/// cores (load average 25) took more than 10 s to reach some of them.
func awaitState(upTo limit: Duration = .seconds(30), _ condition: @escaping @Sendable () async throws -> Bool) async throws {
    try await withTimeout(limit) {
        while try await !condition() {
            try await Task.sleep(for: pollInterval)
        }
    }
}

/// A system that fails every task it is given, counting them.
actor AlwaysFailingSystem: ScanSystem {
    struct Failure: Error, CustomStringConvertible { var description: String { "always fails" } }
    nonisolated let name: String
    nonisolated let isLocal: Bool
    private(set) var calls = 0

    init(name: String = "local", isLocal: Bool = true) {
        self.name = name
        self.isLocal = isLocal
    }

    func run(_ task: ScanTask) async throws -> String {
        calls += 1
        throw Failure()
    }
}

/// Collects a coordinator's events for inspection; tests can await a number of completions.
final class EventLog: Sendable {
    private struct State {
        var events: [ScanEvent] = []
        var completed = 0
    }

    private let state = Watched(State())

    func append(_ event: ScanEvent) {
        state.update { state in
            state.events.append(event)
            if case .completed = event { state.completed += 1 }
        }
    }

    var all: [ScanEvent] { state.value.events }

    /// Returns once `count` tasks have completed; throws after `limit`.
    func waitForCompletions(_ count: Int, upTo limit: Duration = .seconds(30)) async throws {
        try await state.wait(upTo: limit) { $0.completed >= count }
    }

    /// Returns once an event for which `matches` holds was logged; throws after `limit`.
    func waitForEvent(upTo limit: Duration = .seconds(30), _ matches: @escaping @Sendable (ScanEvent) -> Bool) async throws {
        try await state.wait(upTo: limit) { $0.events.contains(where: matches) }
    }

    /// Inputs of the completed events, in order.
    var completedInputs: [Int] {
        all.compactMap { if case .completed(let task, _, _, _, _, _) = $0 { task.input } else { nil } }
    }
    /// Results of the completed events, by input.
    var resultsByInput: [Int: String] {
        Dictionary(all.compactMap { if case .completed(let task, let result, _, _, _, _) = $0 { (task.input, result) } else { nil } },
                   uniquingKeysWith: { first, _ in first })
    }
    var rerunCount: Int { all.filter { if case .rerun = $0 { true } else { false } }.count }
}
