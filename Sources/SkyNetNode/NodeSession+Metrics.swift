import SkyNetMetrics
import SkyNetRuntime
import SkyNetWire
import SkyNetWork

extension NodeSession {
    /// The one way a task's answer leaves the node: counted in `node.taskMetrics` (by its
    /// job, its outcome, and with `started` its time), then sent. `line` is the reply already
    /// encoded, when the caller has it.
    func sendTaskReply(_ reply: Reply, line: [UInt8]? = nil, job: String, started: ContinuousClock.Instant?) {
        switch reply {
        case .result:
            recordTask(job: job, outcome: .completed, started: started)
        case .failure(_, _, let code, _):
            recordTask(job: job, outcome: TaskMetrics.outcome(of: code), started: started)
        default:
            break
        }
        send(line ?? reply.line)
    }

    /// Counts a task of `job` that ended as `outcome`; a `busy` refusal never ran and is not timed.
    func recordTask(job: String, outcome: TaskMetrics.Outcome, started: ContinuousClock.Instant? = nil) {
        let seconds = outcome == .busy ? nil : started.map { (ContinuousClock.now - $0).seconds }
        node.taskMetrics.record(job: job, outcome: outcome, seconds: seconds)
    }
}
