import Foundation
import SkyNet

/// One `skynet scan --json` run: its summary, the coordinator's peak memory and the peers it
/// connected to.
struct ScanRun {
    let seconds: Double
    let completed: Int
    let reruns: Int
    /// The coordinator's peak resident memory (sampled: `PeakMemory`).
    let peakKiB: Int
    /// The most threads the coordinator had (sampled with its memory).
    let peakThreads: Int
    /// Each `connected` event: the peer and its `time` (seconds since the scan's output opened).
    let connected: [(system: String, time: Double)]

    /// Runs `skynet scan --json ARGUMENTS…` and reads the summary event (the last line) and the
    /// `connected` events.
    static func run(_ skynet: URL, _ arguments: [String], environment: [String: String]? = nil) throws -> ScanRun {
        let child = try ChildRun.run(skynet.path, ["scan", "--json"] + arguments, environment: environment)
        let lines = child.stdout.split(separator: "\n")
        guard let last = lines.last,
              let summary = try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any],
              let seconds = summary["seconds"] as? Double, let completed = summary["completed"] as? Int
        else { throw BenchError("skynet scan \(arguments.joined(separator: " ")) gave no summary (status \(child.status))") }
        let connected = lines.filter { $0.hasPrefix(#"{"event":"connected""#) }.compactMap { line -> (String, Double)? in
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let system = event["system"] as? String, let time = event["time"] as? Double else { return nil }
            return (system, time)
        }
        return ScanRun(seconds: seconds, completed: completed, reruns: summary["reruns"] as? Int ?? 0,
                       peakKiB: child.peakKiB, peakThreads: child.peakThreads, connected: connected)
    }
}
