import SkyNetActors
import SkyNetRuntime
import SkyNetWire

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
}
