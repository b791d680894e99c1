import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
@testable import SkyNetWork

/// A one-way signal between tasks, awaited with a bound.
package final class Flag: Sendable {
    package init() {}
    private let signal = AsyncSignal<Void>()
    package var isSet: Bool { signal.current != nil }
    package func set() { signal.fulfil(()) }

    /// Waits until set; throws after `limit`.
    package func wait(upTo limit: Duration) async throws {
        let signal = self.signal
        try await withTimeout(limit) { await signal.value }
    }
}

/// A count shared between tasks, awaited with a bound.
package final class Counter: Sendable {
    private let count = Watched(0)
    package init() {}
    package var value: Int { count.value }
    package func increment() { count.update { $0 += 1 } }

    /// Returns once the count is at least `target`; throws after `limit`.
    package func wait(untilAtLeast target: Int, upTo limit: Duration = .seconds(30)) async throws {
        try await count.wait(upTo: limit) { $0 >= target }
    }
}

/// Whether ThreadSanitizer watches this process: there work that computes runs many times
/// slower, and the heaviest tests do a fraction of it (what they check stays the same).
package let underThreadSanitizer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

/// How often `awaitState` and the other polls of the tests look again.
package let pollInterval: Duration = .milliseconds(5)

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
package func awaitState(upTo limit: Duration = .seconds(30), _ condition: @escaping @Sendable () async throws -> Bool) async throws {
    try await withTimeout(limit) {
        while try await !condition() {
            try await Task.sleep(for: pollInterval)
        }
    }
}

/// A system that fails every task it is given, counting them.
package actor AlwaysFailingSystem: ScanSystem {
    package struct Failure: Error, CustomStringConvertible { package var description: String { "always fails" } }
    package nonisolated let name: String
    package nonisolated let isLocal: Bool
    package private(set) var calls = 0

    package init(name: String = "local", isLocal: Bool = true) {
        self.name = name
        self.isLocal = isLocal
    }

    package func run(_ task: ScanTask) async throws -> String {
        calls += 1
        throw Failure()
    }
}

/// Collects a coordinator's events for inspection; tests can await a number of completions.
package final class EventLog: Sendable {
    package init() {}
    private struct State {
        var events: [ScanEvent] = []
        var completed = 0
    }

    private let state = Watched(State())

    package func append(_ event: ScanEvent) {
        state.update { state in
            state.events.append(event)
            if case .completed = event { state.completed += 1 }
        }
    }

    package var all: [ScanEvent] { state.value.events }

    /// Returns once `count` tasks have completed; throws after `limit`.
    package func waitForCompletions(_ count: Int, upTo limit: Duration = .seconds(30)) async throws {
        try await state.wait(upTo: limit) { $0.completed >= count }
    }

    /// Returns once an event for which `matches` holds was logged; throws after `limit`.
    package func waitForEvent(upTo limit: Duration = .seconds(30), _ matches: @escaping @Sendable (ScanEvent) -> Bool) async throws {
        try await state.wait(upTo: limit) { $0.events.contains(where: matches) }
    }

    /// Inputs of the completed events, in order.
    package var completedInputs: [Int] {
        all.compactMap { if case .completed(let task, _, _, _, _, _) = $0 { task.input } else { nil } }
    }
    /// Results of the completed events, by input.
    package var resultsByInput: [Int: String] {
        Dictionary(all.compactMap { if case .completed(let task, let result, _, _, _, _) = $0 { (task.input, result) } else { nil } },
                   uniquingKeysWith: { first, _ in first })
    }
    package var rerunCount: Int { all.filter { if case .rerun = $0 { true } else { false } }.count }
}

/// What a tool failed to do, with what a person needs to act.
package struct ToolError: Error, CustomStringConvertible {
    package let description: String
    package init(description: String) { self.description = description }
}

/// The stdout of `tool` (looked up in PATH, no shell) run with `arguments`; throws when it
/// cannot be started (e.g. it is not installed), fails, or takes over 60 s.
package func toolOutput(_ tool: String, _ arguments: [String]) async throws -> String {
    var options = ChildProcess.Options(arguments: arguments)
    options.searchPath = true
    options.stdout = .bytes(limit: 1 << 20)
    options.stderr = .tail(bytes: 4096)
    let child: ChildProcess
    do {
        child = try ChildProcess.spawn(tool, options)
    } catch {
        throw ToolError(description: "cannot run '\(tool)' (is it installed? the property tests need it): \(error)")
    }
    let ended = try await withTimeout(.seconds(60)) { await child.exit.value }
    let captured = await child.capturedOutput
    guard ended.succeeded else {
        let stderr = captured?.stderr.map { String(decoding: $0.bytes, as: UTF8.self) } ?? ""
        throw ToolError(description: "\(tool) \(ended): \(stderr)")
    }
    return String(decoding: captured?.stdout?.bytes ?? [], as: UTF8.self)
}

/// A connected pair of sockets over loopback: `server` (accepted) and `client`.
package func loopbackPair() async throws -> (server: Socket, client: Socket) {
    try await onOwnThread(named: "test-pair") {
        let listener = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        let port = try listener.localAddress().port
        let client = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))
        let (server, _) = try listener.accept()
        return (server, client)
    }
}

/// Text read from `descriptor`, blocking (on a thread of its own), until it ends with `suffix`,
/// or (nil) until the end of the input.
package func readText(from descriptor: Int32, until suffix: String? = nil) -> String {
    var text = ""
    var buffer = [UInt8](repeating: 0, count: 4096)
    while suffix.map({ !text.hasSuffix($0) }) ?? true {
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { break }
        text += String(decoding: buffer[..<count], as: UTF8.self)
    }
    return text
}

/// The names of this process's threads (other tests run beside the caller: count by name).
package func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { task in
        (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The descriptors this process holds now (Linux: the entries of /proc/self/fd).
package func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// Waits until at most `bound` descriptors are open, up to `timeout`; the count at the end.
package func descriptors(atMost bound: Int, within timeout: Duration) async -> Int {
    let deadline = ContinuousClock.now + timeout
    var count = openDescriptors()
    while count > bound, ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(100))
        count = openDescriptors()
    }
    return count
}

/// `count` seeded random bytes.
package func randomBytes(_ count: Int, using random: inout SeededRandom) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &random) }
}

/// A directory of its own under the temporary directory, removed when the value goes.
package final class TemporaryDirectory {
    package let path: String

    package init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-crypto-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }

    /// Writes `bytes` to a file named `name` in the directory; returns its path.
    package func write(_ bytes: [UInt8], named name: String) throws -> String {
        let file = path + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// The board's JSON, parsed.
package func parse(_ bytes: [UInt8]) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any], "not a JSON object: \(String(decoding: bytes, as: UTF8.self))")
}

/// Whether two parsed JSON values are the same (compared as canonical JSON text).
package func jsonEqual(_ a: Any?, _ b: Any?) -> Bool {
    guard let a, let b,
          let left = try? JSONSerialization.data(withJSONObject: [a], options: .sortedKeys),
          let right = try? JSONSerialization.data(withJSONObject: [b], options: .sortedKeys) else { return false }
    return left == right
}

/// An array of objects in `json`.
package func objects(_ json: [String: Any], _ key: String) throws -> [[String: Any]] {
    try #require(json[key] as? [[String: Any]], "no array of objects at \(key)")
}
