import SkyNetRuntime

/// The last lines of an ssh session's stderr: the line a failure is reported with. Until the
/// node's welcome they are only kept: what ssh says before it (a refused login, a missing
/// skynet) is reported once, in the `Unreachable` line, not also as the host's log.
final class StderrTail: Sendable {
    static let keep = 4
    private struct State {
        var lines: [String] = []
        var forwarding = false
    }
    private let state = Locked(State())
    /// Fulfilled at the end of stderr (ssh and every process that held it are gone).
    let ended = AsyncSignal<Void>()

    /// Keeps `line`; whether it goes on to the host's log too.
    func append(_ line: String) -> Bool {
        state.withLock { state in
            state.lines.append(line)
            if state.lines.count > Self.keep { state.lines.removeFirst(state.lines.count - Self.keep) }
            return state.forwarding
        }
    }

    /// From now on lines go to the host's log; returns the last ones kept before (the node's
    /// first log lines, ssh's warnings), to forward first.
    func startForwarding() -> [String] {
        state.withLock { state in
            defer { state.forwarding = true }
            return state.forwarding ? [] : state.lines
        }
    }

    /// Whether the node's welcome came (lines go to the host's log).
    var isForwarding: Bool { state.withLock { $0.forwarding } }

    /// The last non-empty line.
    var lastLine: String? { state.withLock { $0.lines.last } }
    var all: [String] { state.withLock { $0.lines } }
}

/// At most `burst` lines at once and `rate` a second after that, per host: a chatty host's log
/// cannot flood the coordinator's terminal. The count of the lines dropped is said at most
/// once a second, before a line let through: a note before every such line would double what
/// a flooding host gets out. What is still counted at the end is said then.
struct LineBucket {
    let burst: Double
    let rate: Double
    private var tokens: Double
    private var last: ContinuousClock.Instant
    /// When the count of dropped lines was last said; nil: not yet.
    private var lastNote: ContinuousClock.Instant?
    /// Lines dropped and not said yet.
    private(set) var dropped = 0
    /// The least time between two counts said.
    static let noteInterval = Duration.seconds(1)

    init(burst: Int = 200, rate: Int = 20, now: ContinuousClock.Instant = .now) {
        self.burst = Double(burst)
        self.rate = Double(rate)
        tokens = Double(burst)
        last = now
    }

    /// Whether a line may go out now; when it may, the count of dropped lines to say before it
    /// (0 when none were dropped, or one was said less than `noteInterval` ago).
    mutating func take(now: ContinuousClock.Instant = .now) -> (allowed: Bool, droppedBefore: Int) {
        tokens = min(burst, tokens + (now - last).seconds * rate)
        last = now
        guard tokens >= 1 else {
            dropped += 1
            return (false, 0)
        }
        tokens -= 1
        guard dropped > 0, lastNote.map({ now - $0 >= Self.noteInterval }) ?? true else { return (true, 0) }
        defer {
            dropped = 0
            lastNote = now
        }
        return (true, dropped)
    }
}

extension SSHChannel {
    /// The longest stderr line kept; longer ones are cut.
    static let maxStderrLine = 4096

    /// Reads ssh's stderr until its end, on one of the process's event loops (on a thread of
    /// its own when no loop can watch it): keeps the last lines and forwards each, escaped and
    /// prefixed `[name] `, to `hostLog`, rate-limited.
    func readStderr(_ descriptor: Int32?) {
        guard let descriptor else { return stderr.ended.fulfil(()) }
        let reading = StderrReading(tail: stderr, prefix: "[\(name)] ", hostLog: hostLog)
        if EventLoop.readPipe(descriptor, chunk: { reading.take($0) }, end: { reading.finish() }) != nil { return }
        startThread(named: "skynet-ssh-stderr") {
            readChunks(from: descriptor, chunkSize: 16 * 1024) { reading.take($0); return true }
            closeFile(descriptor)
            reading.finish()
        }
    }

    /// The node welcomed us: the host's stderr goes to `hostLog` from now on, starting with
    /// the last lines kept before.
    func startForwarding() {
        for line in stderr.startForwarding() { hostLog("[\(name)] " + line.escapingControlCharacters) }
    }

    static func droppedNote(_ count: Int) -> String {
        "\(count) log line\(count == 1 ? "" : "s") dropped (at most 20 a second per host)"
    }
}

/// `close(2)` where a method named `close` would hide it.
func closeFile(_ descriptor: Int32) { _ = close(descriptor) }

/// ssh's stderr as it is read: framed into lines, kept (the tail) and forwarded, rate-limited.
/// Unchecked: one reader at a time touches it (the loop's thread, or the one reading thread).
private final class StderrReading: @unchecked Sendable {  // safe without a lock: only its one reader (a loop's thread, or the fallback thread) touches it
    private let tail: StderrTail
    private let prefix: String
    private let hostLog: @Sendable (String) -> Void
    private var framer = LineFramer(maxLineBytes: SSHChannel.maxStderrLine, overLong: .truncate)
    private var bucket = LineBucket()

    init(tail: StderrTail, prefix: String, hostLog: @escaping @Sendable (String) -> Void) {
        self.tail = tail
        self.prefix = prefix
        self.hostLog = hostLog
    }

    func take(_ chunk: UnsafeRawBufferPointer) {
        framer.split(chunk) { piece in
            if case .line(let bytes) = piece { line(bytes) }
        }
    }

    /// The end: the last line without its newline, the drops not told yet; then `ended`.
    func finish() {
        framer.finish { piece in
            if case .line(let bytes) = piece { line(bytes) }
        }
        if bucket.dropped > 0 { hostLog(prefix + SSHChannel.droppedNote(bucket.dropped)) }
        tail.ended.fulfil(())
    }

    private func line(_ bytes: UnsafeRawBufferPointer) {
        var text = String(decoding: bytes, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }  // ssh ends its own lines with CR LF
        guard !text.isEmpty else { return }
        guard tail.append(text) else { return }
        let (allowed, dropped) = bucket.take()
        guard allowed else { return }
        if dropped > 0 { hostLog(prefix + SSHChannel.droppedNote(dropped)) }
        hostLog(prefix + text.escapingControlCharacters)
    }
}
