import SkyNetNode
import SkyNetRuntime
import SkyNetTransport

/// What a node started by systemd (`Type=notify`, `deploy/skynet-node.service`) tells it over
/// `NOTIFY_SOCKET`: `READY=1` once it accepts connections, `STATUS=` lines while it runs,
/// `WATCHDOG=1` every half `WATCHDOG_USEC`, `STOPPING=1` when it begins to stop. Without
/// `NOTIFY_SOCKET` every call does nothing.
///
/// The watchdog ticks on the cooperative pool on purpose: a pool so starved that the node
/// cannot serve must trip the watchdog, not hide from it on a thread of its own.
final class NodeService: Sendable {
    private let notifier: ServiceNotifier?
    private let node: Node
    /// A changed status is sent at most this often (the watchdog may tick faster).
    private let statusInterval: Duration
    /// The drain's bound once the node began to stop (the status says `draining`), and the
    /// status text last sent.
    private let state = Locked<(stopping: Duration?, lastStatus: String)>((nil, ""))
    private let ticker = Locked<Task<Void, Never>?>(nil)

    private init(notifier: ServiceNotifier?, node: Node, statusInterval: Duration) {
        self.notifier = notifier
        self.node = node
        self.statusInterval = statusInterval
    }

    /// Tells the service manager (if `environment` names one) that `node` is ready, with its
    /// status, and starts the watchdog and status ticks. A node that a scan spawned
    /// (`spawned`) is not the service, whatever its inherited environment says.
    static func ready(_ node: Node, spawned: Bool, environment: [String: String] = ProcessInfo.processInfo.environment,
                      statusInterval: Duration = .seconds(5), log: @escaping @Sendable (String) -> Void) -> NodeService {
        let notifier = spawned ? nil : ServiceNotifier.fromEnvironment(environment) { log("[Node] \($0)") }
        let service = NodeService(notifier: notifier, node: node, statusInterval: statusInterval)
        guard let notifier else { return service }
        notifier.notify(["READY=1", service.status()])
        // The task holds the service until `stopped()` cancels it: the node's lifetime.
        let task = Task { await service.tick(notifier) }
        service.ticker.withLock { $0 = task }
        return service
    }

    /// `STOPPING=1` and a `draining` status: the node stops taking tasks and gives those
    /// running up to `timeout` (the one call a drain makes when it begins).
    func stopping(within timeout: Duration) {
        state.withLock { $0.stopping = timeout }
        notifier?.notify(["STOPPING=1", status()])
    }

    /// The last word: `STATUS=stopped`; the ticks end.
    func stopped() {
        ticker.withLock { $0 }?.cancel()
        notifier?.notify(["STATUS=stopped"])
    }

    /// Sends `WATCHDOG=1` when due and a changed status at most every `statusInterval`, until
    /// cancelled.
    private func tick(_ notifier: ServiceNotifier) async {
        let clock = DeadlineTimer.shared
        let watchdog = notifier.watchdogInterval
        var nextWatchdog = watchdog.map { clock.now + $0 }
        var nextStatus = clock.now + statusInterval
        while !Task.isCancelled {
            let wake = nextWatchdog.map { min($0, nextStatus) } ?? nextStatus
            do { try await clock.sleep(until: wake) } catch { return }
            let now = clock.now
            var lines: [String] = []
            if let due = nextWatchdog, let watchdog, now >= due {
                lines.append("WATCHDOG=1")
                // Late (a starved pool): the next one is an interval from now, not a burst.
                nextWatchdog = due + watchdog > now ? due + watchdog : now + watchdog
            }
            if now >= nextStatus {
                nextStatus = now + statusInterval
                if let status = status(onlyIfChanged: true) { lines.append(status) }
            }
            if !lines.isEmpty { notifier.notify(lines) }
        }
    }

    /// `STATUS=…` as the node stands, remembered as sent.
    private func status() -> String {
        status(onlyIfChanged: false) ?? "STATUS="
    }

    /// `STATUS=…` as the node stands, remembered as sent; nil when `onlyIfChanged` and it has not.
    private func status(onlyIfChanged: Bool) -> String? {
        // Read before our lock: each count has a lock of its own.
        let running = node.system.counters.running, connections = node.connectionCount
        return state.withLock { state in
            let text = if let timeout = state.stopping {
                "draining: \(running) running, timeout \(Self.format(timeout)) s"
            } else {
                "accepting: \(running)/\(node.system.capacity) running, \(Self.count(connections, "connection"))"
            }
            guard !onlyIfChanged || text != state.lastStatus else { return nil }
            state.lastStatus = text
            return "STATUS=" + text
        }
    }

    /// `1 connection`, `2 connections`.
    private static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }

    /// Whole seconds without a fraction, else one decimal.
    private static func format(_ duration: Duration) -> String {
        let seconds = duration.seconds
        return seconds == seconds.rounded() && seconds < 1e9 ? String(Int(seconds)) : String(cFormat: "%.1f", seconds)
    }
}
