import SkyNetCluster
import SkyNetMetrics
import SkyNetRuntime
import SkyNetTransport

/// What a coordinator's `/metrics` shows besides its tasks (`TaskMetrics`) and the process:
/// slots and peer connections from the dashboard's board, failed dashboard logins, bytes
/// exchanged with peers. Read from values the dashboard already keeps, each under its own
/// lock: an HTTP thread cannot await the `Systems` actor, so slots are the board's last
/// picture (the dashboard's ticker copies `Systems.slotUse` there every 100 ms).
package enum ScanMetrics {
    package static func families(board: ScanBoard, loginFailures: Int) -> [MetricFamily] {
        let picture = board.metricsPicture()
        return [
            MetricFamily(name: "skynet_slots", help: "Task slots, running and free.", kind: .gauge, samples: [
                .init(labels: [("state", "running")], value: Double(picture.running)),
                .init(labels: [("state", "free")], value: Double(picture.free)),
            ]),
            MetricFamily(name: "skynet_connections", help: "Peer links: connected, and still connecting or unreachable.",
                         kind: .gauge, samples: [
                .init(labels: [("state", "authenticated")], value: Double(picture.connected)),
                .init(labels: [("state", "pending")], value: Double(picture.connecting)),
            ]),
            .single("skynet_login_failures_total", help: "Failed logins (a wrong dashboard proof).",
                    kind: .counter, value: Double(loginFailures)),
        ]
    }

    /// `skynet_bytes_total` of the peer links (`PeerLinks.traffic`); zeros before the links start.
    package static func bytes(_ traffic: ByteTally?) -> MetricFamily {
        MetricFamily(name: "skynet_bytes_total", help: "Bytes sent to and received from peers.", kind: .counter, samples: [
            .init(labels: [("direction", "sent")], value: Double(traffic?.sent ?? 0)),
            .init(labels: [("direction", "received")], value: Double(traffic?.received ?? 0)),
        ])
    }
}

extension ScanBoard {
    /// Slots and links as the board last saw them. Free slots are those of systems not held
    /// back (a suspended or draining peer takes no work); a link counts as connected while it is up
    /// (answering or not), as connecting while it is being dialled or cannot be reached.
    func metricsPicture() -> (running: Int, free: Int, connected: Int, connecting: Int) {
        state.withLock { state in
            var picture = (running: 0, free: 0, connected: 0, connecting: 0)
            for row in state.rows {
                // Only a system linked now has slots: a gone one's last picture is history.
                let linked: Bool
                switch row.state {
                case .connected, .unresponsive, .draining: picture.connected += 1; linked = true
                case .connecting, .unreachable: picture.connecting += 1; linked = false
                case .local: linked = true
                case .gone, .unauthorized, .refused, .lacksJob: linked = false
                }
                guard linked else { continue }
                picture.running += row.slots.inFlight
                if !row.slots.suspended, !row.slots.draining { picture.free += max(0, row.slots.capacity - row.slots.inFlight) }
            }
            return picture
        }
    }
}
