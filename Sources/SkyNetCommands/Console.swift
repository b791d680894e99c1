import SkyNetRuntime

/// Lines to stdout and stderr.
///
/// Async callers (a scan's events, its progress line, `status`) go through `writer`: a
/// bounded queue that a thread of its own writes out, so a stalled terminal or pipe makes
/// them suspend and never blocks a thread of the pool; a command flushes it before it
/// returns. A node's logs, written from threads that must never wait (its accept loop, its
/// reader threads, the pool), are offered to the same queue with `log`: when it is full
/// they are dropped and counted, never waited for. Synchronous callers that cannot await
/// (usage errors, the exit on a second signal) write directly with `out`/`err`/`raw`, each
/// line in one `write`.
enum Console {
    /// The queue of stdout and stderr (one, so their order holds on a shared terminal).
    static let writer = LineWriter(capacity: 256 * 1024)

    /// Queues a line for stdout; suspends while the queue is full.
    static func print(_ line: String) async { await writer.write(line + "\n", to: 1) }
    /// Queues a line for stderr; suspends while the queue is full.
    static func printError(_ line: String) async { await writer.write(line + "\n", to: 2) }
    /// Waits until every queued line is out.
    static func flush() async { await writer.flush() }

    /// Waits until every queued line is out, or `limit` has passed (stderr that nobody reads
    /// must not keep a process from exiting).
    static func flush(within limit: Duration) async {
        _ = try? await withTimeout(limit) { await writer.flush() }
    }

    /// Queues a log line for stderr if there is room now, never waiting: when the queue is
    /// full the line is dropped and counted, and once room returns `notice(count)` is written first.
    static func log(_ line: String, droppedNotice notice: @escaping @Sendable (Int) -> String) {
        writer.offer(line + "\n", to: 2, countingDropsAs: { notice($0) + "\n" })
    }

    static func out(_ line: String) { raw(line + "\n", to: 1) }
    static func err(_ line: String) { raw(line + "\n", to: 2) }

    /// Writes `text` as it is (no newline added), blocking: only for synchronous callers.
    static func raw(_ text: String, to descriptor: Int32) {
        // A closed stdout (a pipe to `head`) drops the line: never a crash.
        _ = Array(text.utf8).withUnsafeBytes { writeFully($0, to: descriptor) }
    }
}
