import SkyNetRuntime
import SkyNetScheduler
import SkyNetWork

extension PeerLinks {
    /// Whether a peer's welcome lets it run the scan's job, and whether it runs it as the
    /// others do: the same words, however quoted (`CommandTemplate.runsLike`). Shared by every
    /// link of a coordinator (one value behind one lock).
    final class JobCheck: Sendable {
        enum Verdict {
            case usable
            /// Use it, after reporting this warning (once per peer): it runs another command,
            /// and the scan allows that.
            case differs(ClusterEvent)
            /// Do not use it: its welcome does not list the job, or it runs another command.
            case unusable(ClusterEvent)
        }

        private struct State {
            /// The summary the others are compared with: the coordinator's own, else the first peer's.
            var expected: String?
            /// The peers already warned about.
            var warned: Set<String> = []
        }

        let job: String
        /// Whether a peer that runs another command is used anyway (`--allow-job-mismatch`).
        let allowsMismatch: Bool
        private let state: Locked<State>

        init(job: String, expected: String?, allowsMismatch: Bool = false) {
            self.job = job
            self.allowsMismatch = allowsMismatch
            state = Locked(State(expected: expected))
        }

        func check(_ welcome: PeerConnection.Welcome, of peer: String) -> Verdict {
            guard let summary = welcome.jobs[job] else {
                return .unusable(.lacksJob(peer, job: job, jobs: welcome.jobs.keys.sorted()))
            }
            return state.withLock { state in
                guard let expected = state.expected else {
                    state.expected = summary
                    return .usable
                }
                guard !Self.sameCommand(summary, expected) else { return .usable }
                let event = ClusterEvent.jobDiffers(peer, job: job, summary: summary, expected: expected, used: allowsMismatch)
                guard allowsMismatch else { return .unusable(event) }
                return state.warned.insert(peer).inserted ? .differs(event) : .usable
            }
        }

        /// Whether two summaries name the same command: the same words when both split as
        /// commands do, else the same text (a label such as `built-in simulated scan`).
        static func sameCommand(_ summary: String, _ other: String) -> Bool {
            guard summary != other else { return true }
            guard let first = try? CommandTemplate(summary), let second = try? CommandTemplate(other) else { return false }
            return first.runsLike(second)
        }
    }
}
