import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster

extension ProcessTests {
    /// Liveness is not a deadline, over real processes: a job longer than `--timeout` runs once.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct JobLivenessProcessTests {
        @Test func aJobLongerThanTheTimeoutRunsOnceNotTwice() async throws {
            // `sleep 2 0` and `sleep 2 1` (the sector is appended): 2 and 3 s, four and six timeouts.
            try await withCluster(nodes: 1, nodeArguments: ["--job", "slow=sleep 2"]) { cluster in
                let run = try await cluster.scan(["--job", "slow", "--total", "2", "--timeout", "0.5",
                                                  "--local-capacity", "0", "--json"])
                #expect(run.status == 0, "\(run.stderr)")
                let events = run.lines.compactMap { line in
                    (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
                }
                let completed = events.filter { $0["event"] as? String == "completed" }
                #expect(completed.count == 2)
                #expect(completed.allSatisfy { $0["attempt"] as? Int == 1 && $0["system"] as? String == "beta" })
                #expect(!events.contains { $0["event"] as? String == "retry" }, "\(run.stdout)")
                let summary = events.last { $0["event"] as? String == "summary" }
                #expect(summary?["reruns"] as? Int == 0)
                #expect(summary?["completed"] as? Int == 2)
            }
        }
    }
}
