import SkyNetCluster
import SkyNetRuntime

/// `skynet status --watch`: the status again and again, like `watch skynet status`. In a
/// terminal each round redraws the screen in place, so the table does not flicker; piped, it
/// streams as `kubectl get -w` does (`skynet status --watch | tee log` works); see `render`.
extension StatusCommand {
    /// Probes every `interval` seconds until SIGINT, SIGTERM or SIGHUP (then 0), or until stdout is
    /// closed (a reader such as `head` left: 0 too).
    func watch(every interval: Double) async -> Int32 {
        let signals = await TerminationSignals.install()
        let terminal = isatty(1) == 1
        let ended = AsyncSignal<Void>()
        let rounds = Task { await self.rounds(every: .seconds(interval), terminal: terminal) }
        // The signal does not wait for a round's probes (each may take --timeout).
        signals.received.whenFulfilled { _ in ended.fulfil(()) }
        Task {
            await rounds.value
            ended.fulfil(())
        }
        await ended.value
        rounds.cancel()
        await Console.flush(within: .seconds(2))
        withExtendedLifetime(signals) {}
        return 0
    }

    /// One round after another, each starting `interval` after the last one started, or at
    /// once when the last one took longer; never two at a time.
    private func rounds(every interval: Duration, terminal: Bool) async {
        let clock = DeadlineTimer.shared
        var number = 0
        while !Task.isCancelled {
            let start = clock.now
            number += 1
            let statuses = await probeAll()
            guard !Task.isCancelled else { return }
            // One write a round, so a round is never torn; it suspends while stdout is slow.
            await Console.writer.write(render(statuses, round: number, terminal: terminal), to: 1)
            await Console.flush()
            if Console.writer.failure(of: 1) != nil { return }
            do { try await clock.sleep(until: start + interval) } catch { return }
        }
    }

    /// What one round prints: with --json one object per node, tagged with the round and
    /// the time; piped, the header line and the table, then a blank line.
    func render(_ statuses: [PeerStatus], round: Int, terminal: Bool) -> String {
        if json {
            let time = Self.timestamp("%Y-%m-%dT%H:%M:%SZ", utc: true)
            return statuses.map { Self.json($0, round: (round, time)) + "\n" }.joined()
        }
        let up = statuses.filter(\.isUp).count
        let header = "Every \(interval?.formatted ?? "1")s: skynet status --cluster \(clusterPath)  "
            + "\(up)/\(statuses.count) up  \(Self.timestamp("%Y-%m-%d %H:%M:%S", utc: false))"
        // Piped, the only blank line ends a round, so a reader can split rounds on it.
        guard terminal else { return header + "\n" + Self.table(statuses) + "\n\n" }
        let lines = [header, ""] + Self.table(statuses).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // Home, every line erased to its end, then everything below: no blank frame between rounds.
        return (round == 1 ? "\u{1B}[H\u{1B}[2J" : "\u{1B}[H") + lines.map { $0 + "\u{1B}[K\n" }.joined() + "\u{1B}[J"
    }

    /// The time now in `format` (strftime), local or UTC.
    static func timestamp(_ format: String, utc: Bool) -> String {
        var now = time(nil)
        var parts = tm()
        if utc { gmtime_r(&now, &parts) } else { localtime_r(&now, &parts) }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, format, &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
