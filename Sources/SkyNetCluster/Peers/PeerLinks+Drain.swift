import SkyNetRuntime
import SkyNetScheduler
import SkyNetTransport

extension PeerLinks {
    /// Waits until `peer`'s link closes (closing it when the caller is cancelled). When the
    /// node says it drains first, its system gets no new work from then on and the drain is
    /// reported; the link stays until the node closes it (its running tasks may finish).
    static func awaitClose(of peer: PeerConnection, named name: String, systems: Systems,
                           log: @escaping @Sendable (ClusterEvent) async -> Void) async -> Connection.CloseReason {
        // Whichever comes first: the drain's timeout, or nil for a link that closed.
        let first = AsyncSignal<Double?>()
        peer.draining.whenFulfilled { first.fulfil($0) }
        peer.closed.whenFulfilled { _ in first.fulfil(nil) }
        let timeout = await withTaskCancellationHandler { await first.value } onCancel: { peer.close() }
        if let timeout, !Task.isCancelled {
            await systems.setDraining(true, named: name)
            await log(.draining(name, reason: "it is stopping; its running tasks may finish within \(timeout.asWritten) s"))
        }
        return await withTaskCancellationHandler { await peer.closed.value } onCancel: { peer.close() }
    }
}
