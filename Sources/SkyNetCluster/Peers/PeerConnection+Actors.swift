import SkyNetActors
import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// A link to a node carries calls of the actors it hosts: the same request ids, liveness and
/// end of link as tasks (a call in flight fails at once with `PeerDisconnected` when the link
/// ends). A call given up here (the caller's cancellation, a peer that stopped answering) is
/// cancelled on the node too.
extension PeerConnection: ActorCallChannel {
    package func call(_ call: ActorCall) async throws -> ActorReply {
        let id = nextID()
        let reply: Reply
        do {
            reply = try await request(id: id, .call(id: id, call))
        } catch let error as WireError {
            reply = .error(error)
        } catch where error is CancellationError || error is TimeoutError || error is PeerUnresponsive {
            post(.cancel(id: id))  // given up here: the node stops the method, should it still be alive
            throw error
        }
        guard let answer = ActorReply(reply, to: call) else {
            throw WireError.badRequest("the node answered a call with \(reply)")
        }
        return answer
    }

    package func spawn(_ spawn: ActorSpawn) async throws -> ClusterActorID {
        let id = nextID()
        switch try await actorRequest(id: id, .spawn(id: id, spawn)) {
        case .spawned(_, let system, let number): return ClusterActorID(system: system, number: number)
        case .threw(_, let type, let message): throw ClusterActorSystemError.remote(type: type, message: message)
        case let other: throw WireError.badRequest("the node answered a spawn with \(other)")
        }
    }

    package func lookup(name: String) async throws -> ClusterActorID? {
        let id = nextID()
        do {
            switch try await actorRequest(id: id, .lookup(id: id, name: name)) {
            case .spawned(_, let system, let number): return ClusterActorID(system: system, number: number)
            case let other: throw WireError.badRequest("the node answered a lookup with \(other)")
            }
        } catch ClusterActorSystemError.refused(code: FailureCode.actorNotFound.rawValue, _) {
            return nil
        }
    }

    /// Sends a spawn or a lookup; a node's refusal comes back as the `ClusterActorSystemError` it means.
    private func actorRequest(id: Int, _ request: Request) async throws -> Reply {
        do {
            return try await self.request(id: id, request)
        } catch let error as WireError {
            throw ClusterActorSystemError(error)
        }
    }
}
