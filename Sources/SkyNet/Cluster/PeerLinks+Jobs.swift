extension PeerLinks {
    /// Whether a peer's welcome lets it run the scan's job, and whether it runs it as the
    /// others do. Shared by every link of a coordinator (one value behind one lock).
    final class JobCheck: Sendable {
        enum Verdict {
            case usable
            /// Use it, after reporting this warning (once per peer).
            case differs(ClusterEvent)
            /// Do not use it: its welcome does not list the job.
            case lacks(ClusterEvent)
        }

        private struct State {
            /// The summary the others are compared with: the coordinator's own, else the first peer's.
            var expected: String?
            /// The peers already warned about.
            var warned: Set<String> = []
        }

        let job: String
        private let state: Locked<State>

        init(job: String, expected: String?) {
            self.job = job
            state = Locked(State(expected: expected))
        }

        func check(_ welcome: PeerConnection.Welcome, of peer: String) -> Verdict {
            guard let summary = welcome.jobs[job] else {
                return .lacks(.lacksJob(peer, job: job, jobs: welcome.jobs.keys.sorted()))
            }
            return state.withLock { state in
                guard let expected = state.expected else {
                    state.expected = summary
                    return .usable
                }
                guard summary != expected, state.warned.insert(peer).inserted else { return .usable }
                return .differs(.jobDiffers(peer, job: job, summary: summary, expected: expected))
            }
        }
    }
}
