import SkyNetRuntime

/// The last lines of an ssh session's stderr: the line a failure is reported with.
final class StderrTail: Sendable {
    static let keep = 4
    private let lines = Locked<[String]>([])
    /// Fulfilled at the end of stderr (ssh and every process that held it are gone).
    let ended = AsyncSignal<Void>()

    func append(_ line: String) {
        lines.withLock { lines in
            lines.append(line)
            if lines.count > Self.keep { lines.removeFirst(lines.count - Self.keep) }
        }
    }

    /// The last non-empty line.
    var lastLine: String? { lines.withLock { $0.last } }
    var all: [String] { lines.withLock { $0 } }
}

/// At most `burst` lines at once and `rate` a second after that, per host: a chatty host's log
/// cannot flood the coordinator's terminal.
struct LineBucket {
    let burst: Double
    let rate: Double
    private var tokens: Double
    private var last: ContinuousClock.Instant
    /// Lines dropped since the last one let through.
    private(set) var dropped = 0

    init(burst: Int = 200, rate: Int = 20, now: ContinuousClock.Instant = .now) {
        self.burst = Double(burst)
        self.rate = Double(rate)
        tokens = Double(burst)
        last = now
    }

    /// Whether a line may go out now; the count of lines dropped before it, when it may.
    mutating func take(now: ContinuousClock.Instant = .now) -> (allowed: Bool, droppedBefore: Int) {
        tokens = min(burst, tokens + (now - last).seconds * rate)
        last = now
        guard tokens >= 1 else {
            dropped += 1
            return (false, 0)
        }
        tokens -= 1
        defer { dropped = 0 }
        return (true, dropped)
    }
}

extension SSHChannel {
    /// The longest stderr line kept; longer ones are cut.
    static let maxStderrLine = 4096

    /// Reads ssh's stderr on a thread of its own until its end: keeps the last lines and
    /// forwards each, escaped and prefixed `[name] `, to `hostLog`, rate-limited.
    func readStderr(_ descriptor: Int32?, hostLog: @escaping @Sendable (String) -> Void) {
        guard let descriptor else { return stderr.ended.fulfil(()) }
        let tail = stderr, prefix = "[\(name)] "
        startThread(named: "skynet-ssh-stderr") {
            var framer = LineFramer(maxLineBytes: Self.maxStderrLine, overLong: .truncate)
            var bucket = LineBucket()
            func take(_ bytes: UnsafeRawBufferPointer) {
                var text = String(decoding: bytes, as: UTF8.self)
                if text.hasSuffix("\r") { text.removeLast() }  // ssh ends its own lines with CR LF
                guard !text.isEmpty else { return }
                tail.append(text)
                let (allowed, dropped) = bucket.take()
                guard allowed else { return }
                if dropped > 0 { hostLog(prefix + Self.droppedNote(dropped)) }
                hostLog(prefix + text.escapingControlCharacters)
            }
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                buffer.withUnsafeBytes { chunk in
                    framer.split(UnsafeRawBufferPointer(rebasing: chunk[..<count])) { piece in
                        if case .line(let bytes) = piece { take(bytes) }
                    }
                }
            }
            framer.finish { piece in
                if case .line(let bytes) = piece { take(bytes) }
            }
            if bucket.dropped > 0 { hostLog(prefix + Self.droppedNote(bucket.dropped)) }
            closeFile(descriptor)
            tail.ended.fulfil(())
        }
    }

    static func droppedNote(_ count: Int) -> String {
        "\(count) log line\(count == 1 ? "" : "s") dropped (at most 20 a second per host)"
    }
}

/// `close(2)` where a method named `close` would hide it.
func closeFile(_ descriptor: Int32) { _ = close(descriptor) }
