import SkyNetActors
import SkyNetLink
import SkyNetRuntime
import SkyNetTransport
import SkyNetWire
import SkyNetWork

/// The client's own actor system, named in its hello (`actors`), and the node system's link
/// to it once the client is welcomed.
struct CallerActors {
    let system: String
    var link: Int?
}

/// A call of the client's actors that the node sent, awaiting its answer.
struct CallToCaller {
    let continuation: CheckedContinuation<Reply, any Error>
    let timer: TimerTicket
}

/// The way back: the node's actors call the client's over the client's own connection
/// (`call` lines from the node, answered by `returned`, `threw` or `error` lines), so that a
/// reference to a caller's actor, passed as an argument, can be called from the node.
final class CallerChannel: ActorCallChannel {
    private let session: NodeSession

    init(session: NodeSession) {
        self.session = session
    }

    var isDraining: Bool { false }

    func call(_ call: ActorCall, timeout: Duration) async throws -> ActorReply {
        let reply = try await session.callCaller(call, timeout: timeout)
        guard let answer = ActorReply(reply, to: call) else { throw WireError.badRequest("the caller answered a call with \(reply)") }
        return answer
    }

    func spawn(_ spawn: ActorSpawn, timeout: Duration) async throws -> ClusterActorID {
        throw ClusterActorSystemError.refused(code: FailureCode.unknownType.rawValue, message: "a caller makes no actors for its nodes")
    }

    func lookup(name: String, type: String) async throws -> ClusterActorID? { nil }
}

/// The session ended while a call of the caller's actors awaited its answer.
struct CallerGone: Error, CustomStringConvertible {
    let reason: String
    var description: String { "the caller's connection ended (\(reason))" }
}

extension NodeSession {
    /// What owns the actors this connection's spawns made: they are let go when it closes.
    var ownerKey: Int { ObjectIdentifier(self).hashValue }

    /// Once the client is welcomed: the node's actor system reaches the client's through
    /// this connection, when both have one.
    func linkCallerActors() {
        guard let actors = node.options.actors, let system = state.withLock({ $0.callerActors?.system }) else { return }
        let client = state.withLock { state in if case .serving(let client) = state.phase { client } else { system } }
        // The caller links the other nodes: calls for their actors go through it.
        let number = actors.connect(to: system, node: client, through: CallerChannel(session: self), routesOthers: true)
        state.withLock { $0.callerActors?.link = number }
    }

    /// Sends `call` to the client and awaits its answer, for at most `timeout`.
    func callCaller(_ call: ActorCall, timeout: Duration) async throws -> Reply {
        let clock = node.clock
        return try await withCheckedThrowingContinuation { continuation in
            let id = state.withLock { state -> Int? in
                guard state.callerActors?.link != nil else { return nil }
                state.lastCallToCaller += 1
                let id = state.lastCallToCaller
                let timer = clock.schedule(at: clock.now + timeout) { [self] in answer(id, with: .failure(TimeoutError())) }
                state.callsToCaller[id] = CallToCaller(continuation: continuation, timer: timer)
                return id
            }
            guard let id else { return continuation.resume(throwing: CallerGone(reason: "it was closed")) }
            send(call.line(id: id))
        }
    }

    /// The client's answer to a call the node sent it; one to no such call is dropped.
    func answerCallToCaller(_ reply: Reply) {
        guard let id = reply.requestID else { return }
        answer(id, with: .success(reply))
    }

    private func answer(_ id: Int, with result: Result<Reply, any Error>) {
        guard let call = state.withLock({ $0.callsToCaller.removeValue(forKey: id) }) else { return }
        node.clock.cancel(call.timer)
        call.continuation.resume(with: result)
    }

    /// The connection ended: the calls of the client's actors fail (they may have run), and
    /// the node's system no longer reaches the client's.
    func endCallsToCaller(_ reason: Connection.CloseReason) {
        let (calls, caller) = state.withLock { state in
            defer {
                state.callsToCaller = [:]
                state.callerActors?.link = nil
            }
            return (state.callsToCaller, state.callerActors)
        }
        for call in calls.values {
            node.clock.cancel(call.timer)
            call.continuation.resume(throwing: CallerGone(reason: reason.description))
        }
        if let caller, let link = caller.link { node.options.actors?.disconnect(from: caller.system, link: link) }
        node.options.actors?.release(owner: ownerKey)
    }
}
