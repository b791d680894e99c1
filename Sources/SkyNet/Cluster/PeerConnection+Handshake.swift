/// Routes the reader thread's events: to the handshake until the welcome, then to the peer.
final class Handshake: Sendable {
    private enum Route { case handshake, peer(PeerConnection), ended(String) }
    private let route = Locked(Route.handshake)
    let welcome = AsyncSignal<Result<PeerConnection.Welcome, any Error>>()

    func deliver(_ event: Connection.Event) {
        switch route.withLock({ $0 }) {
        case .peer(let peer):
            peer.deliver(event)
        case .handshake:
            guard case .line(let line) = event else { return }
            switch Result(catching: { try Reply.decode(line) }) {
            case .success(.welcome(_, let name, let capacity, let jobs, let idle)):
                welcome.fulfil(.success(.init(name: name, capacity: capacity, jobs: jobs, idleSeconds: idle)))
            case .success(.error(let error)):
                welcome.fulfil(.failure(error))
            case .success(let other):
                welcome.fulfil(.failure(WireError.badRequest("expected a welcome, got \(other)")))
            case .failure(let error):
                welcome.fulfil(.failure(error))
            }
        case .ended:
            break
        }
    }

    func fail(_ error: PeerDisconnected) {
        let previous = route.withLock { route in
            defer { route = .ended(error.reason) }
            return route
        }
        if case .peer(let peer) = previous { peer.end(error.reason) }
        welcome.fulfil(.failure(error))
    }

    /// From now on replies go to `peer`. If the connection ended in between, the peer learns.
    func handOver(to peer: PeerConnection) {
        let ended: String? = route.withLock { route in
            if case .ended(let reason) = route { return reason }
            route = .peer(peer)
            return nil
        }
        if let ended { peer.end(ended) }
    }
}
