import SkyNetMetrics
import SkyNetRuntime

extension Node {
    /// What the node's `/metrics` shows besides the process: tasks, slots, connections, failed
    /// logins, bytes and whether it drains. Each family is read under its owner's lock alone
    /// (`TaskMetrics`, the system's counters, `admission`, `logins`), so no counter goes down
    /// between two scrapes. No family carries an input, a result, a token or a peer.
    package func metricFamilies() -> [MetricFamily] {
        let running = system.counters.running
        let (authenticated, waiting, bytes) = admission.withLock { admission in
            (admission.greeted.count, admission.pending.count, admission.closedBytes.adding(admission.open.values.map(\.connection)))
        }
        let loginFailures = logins.withLock { $0.total }
        // A node that drains or stops takes no task: none of its slots is free, as a
        // coordinator counts a draining peer (one family, one meaning).
        let stopping = isStopping
        let free = stopping ? 0 : max(0, system.capacity - running)
        return taskMetrics.families() + [
            MetricFamily(name: "skynet_slots", help: "Task slots, running and free.", kind: .gauge, samples: [
                .init(labels: [("state", "running")], value: Double(running)),
                .init(labels: [("state", "free")], value: Double(free)),
            ]),
            MetricFamily(name: "skynet_connections", help: "Client connections: past their hello, and still owing it or its proof.",
                         kind: .gauge, samples: [
                .init(labels: [("state", "authenticated")], value: Double(authenticated)),
                .init(labels: [("state", "pending")], value: Double(waiting)),
            ]),
            .single("skynet_login_failures_total", help: "Failed logins (a wrong or missing token, a wrong proof).",
                    kind: .counter, value: Double(loginFailures)),
            MetricFamily(name: "skynet_bytes_total", help: "Bytes sent to and received from clients.", kind: .counter, samples: [
                .init(labels: [("direction", "sent")], value: Double(bytes.sent)),
                .init(labels: [("direction", "received")], value: Double(bytes.received)),
            ]),
            .single("skynet_draining", help: "1 while the node drains or stops (it takes no new tasks), else 0.",
                    kind: .gauge, value: stopping ? 1 : 0),
        ] + (options.actors?.metricFamilies() ?? [])
    }
}
