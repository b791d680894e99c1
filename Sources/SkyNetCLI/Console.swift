import SkyNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lines to stdout and stderr.
///
/// Async callers (a scan's events, its progress line, `status`) go through `writer`: a
/// bounded queue that a thread of its own writes out, so a stalled terminal or pipe makes
/// them suspend and never blocks a thread of the pool; a command flushes it before it
/// returns. Synchronous callers that cannot await (usage errors, node logs, the exit on a
/// second signal) write directly with `out`/`err`/`raw`, each line in one `write`.
enum Console {
    /// The queue of stdout and stderr (one, so their order holds on a shared terminal).
    static let writer = LineWriter(capacity: 256 * 1024)

    /// Queues a line for stdout; suspends while the queue is full.
    static func print(_ line: String) async { await writer.write(line + "\n", to: 1) }
    /// Queues a line for stderr; suspends while the queue is full.
    static func printError(_ line: String) async { await writer.write(line + "\n", to: 2) }
    /// Waits until every queued line is out.
    static func flush() async { await writer.flush() }

    static func out(_ line: String) { raw(line + "\n", to: 1) }
    static func err(_ line: String) { raw(line + "\n", to: 2) }

    /// Writes `text` as it is (no newline added), blocking: only for synchronous callers.
    static func raw(_ text: String, to descriptor: Int32) {
        // A closed stdout (a pipe to `head`) drops the line: never a crash.
        _ = Array(text.utf8).withUnsafeBytes { writeFully($0, to: descriptor) }
    }
}
