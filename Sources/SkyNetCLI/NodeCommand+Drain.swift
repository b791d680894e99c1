import SkyNet
import SkyNetNode
import SkyNetRuntime

extension NodeCommand {
    /// The first termination signal drains the node: no new tasks, coordinators
    /// told, running tasks given `--drain-timeout`, the rest cancelled; then every job's
    /// process group still there is stopped and reaped, so none outlives the node.
    func drain(_ node: Node, signal: Int32) async {
        let timeout = options.drainTimeout
        let running = node.system.counters.running
        Self.log("[Node] Draining (signal \(signal)): up to \(String(cFormat: "%g", timeout.seconds)) s for \(running) running task\(running == 1 ? "" : "s")")
        await node.drain(within: timeout)
        // Cancelled tasks' jobs had their kill grace; a job that ignores SIGTERM is killed here.
        await ChildProcess.endEveryGroup(grace: .seconds(3))
    }
}
