@testable import SkyNet

/// A one-way signal between tasks, awaited with a bound.
final class Flag: Sendable {
    private let state = Locked(false)
    var isSet: Bool { state.withLock { $0 } }
    func set() { state.withLock { $0 = true } }

    /// Waits until set, checking every few milliseconds; throws after `limit`.
    func wait(upTo limit: Duration) async throws {
        let deadline = ContinuousClock.now + limit
        while !isSet {
            guard ContinuousClock.now < deadline else { throw TimeoutError() }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// A count shared between tasks.
final class Counter: Sendable {
    private let count = Locked(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
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

/// Collects a coordinator's events for inspection.
final class EventLog: Sendable {
    private let events = Locked<[ScanEvent]>([])
    func append(_ event: ScanEvent) { events.withLock { $0.append(event) } }
    var all: [ScanEvent] { events.withLock { $0 } }

    /// Inputs of the completed events, in order.
    var completedInputs: [Int] {
        all.compactMap { if case .completed(let task, _, _, _, _, _) = $0 { task.input } else { nil } }
    }
    var rerunCount: Int { all.filter { if case .rerun = $0 { true } else { false } }.count }
}
