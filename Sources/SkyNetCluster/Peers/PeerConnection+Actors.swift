import SkyNetActors
import SkyNetAuth
import SkyNetRuntime
import SkyNetTransport
import SkyNetWire
import SkyNetWork

/// A link to a node carries calls of the actors it hosts: the same request ids, liveness and
/// end of link as tasks (a call in flight fails at once with `PeerDisconnected` when the link
/// ends). A call given up here (the caller's cancellation, a peer that stopped answering) is
/// cancelled on the node too.
extension PeerConnection: ActorCallChannel {
    /// How long a node may leave a ping unanswered while calls are in flight: then every call
    /// on its link fails at once (`linkLost`), well before their deadlines. The bound a
    /// coordinator's links give tasks by default (`PeerLinks.Settings.timeout`).
    static let actorLiveness: Duration = .seconds(5)

    /// The most bytes a line to the node may hold (on a token link, a frame's message). Past it
    /// the node would end the link (`frame-too-large`), and every call on it.
    var lineRoom: Int { connection.limits.maxLineBytes }

    package func call(_ call: ActorCall, timeout: Duration) async throws -> ActorReply {
        let id = nextID()
        let line = call.line(id: id)
        let room = lineRoom
        guard line.count <= room else {
            throw ClusterActorSystemError.badValue("the call's line is \(line.count) bytes, more than a line holds (\(room)): pass less")
        }
        let reply: Reply
        do {
            reply = try await request(id: id, sending: { try self.sendCall(line, id: id) }, timeout: timeout, liveness: Self.actorLiveness)
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

    /// Sends a call's line now if the queue to the node has room (`Connection.sendIfRoom`);
    /// else a task sends it in turn once there is, unless the call ended first (cancelled,
    /// timed out, or its link lost: then it is never sent, and cannot run, and the task ends
    /// with it). A window of calls with large arguments to a node that reads slowly waits,
    /// instead of ending the link.
    private func sendCall(_ line: [UInt8], id: Int) throws(Connection.Closed) {
        guard try !connection.sendIfRoom(line) else { return }
        let sender = Task {
            do {
                _ = try await connection.sendWhenRoom(line, unless: { !self.isPending(id) })
            } catch {
                complete(id, with: .failure(PeerDisconnected(peer: name, reason: connection.closed.current.map(\.description) ?? "\(error)")))
            }
        }
        setSender(sender, of: id)
    }

    package func spawn(_ spawn: ActorSpawn, timeout: Duration) async throws -> ClusterActorID {
        let id = nextID()
        let room = lineRoom
        guard spawn.line(id: id).count <= room else {
            throw ClusterActorSystemError.badValue("the spawn's arguments are more than a line holds (\(room) bytes): pass less")
        }
        switch try await actorRequest(id: id, .spawn(id: id, spawn), timeout: timeout) {
        case .spawned(_, let system, let number): return ClusterActorID(system: system, number: number)
        case .threw(_, let type, let message): throw ClusterActorSystemError.remote(type: type, message: message)
        case let other: throw WireError.badRequest("the node answered a spawn with \(other)")
        }
    }

    package func lookup(name: String, type: String) async throws -> ClusterActorID? {
        let id = nextID()
        do {
            switch try await actorRequest(id: id, .lookup(id: id, name: name, type: type)) {
            case .spawned(_, let system, let number): return ClusterActorID(system: system, number: number)
            case let other: throw WireError.badRequest("the node answered a lookup with \(other)")
            }
        } catch ClusterActorSystemError.refused(code: FailureCode.actorNotFound.rawValue, _) {
            return nil
        }
    }

    /// From now on, runs the calls the node makes of `host`'s actors (references to them
    /// passed to the node's actors), at most `ActorCall.maxCallsPerConnection` at once.
    package func serveCalls(of host: ClusterActorSystem) {
        callsFromNode.withLock { $0.host = host }
    }

    /// A line from the node that is no reply: a call of our actors, run on the host system
    /// and answered; anything else is refused (a node speaks no other request).
    func serveCall(_ line: Data) {
        guard case .call(let id, let call)? = try? Request.decode(line) else { return }
        let host = callsFromNode.withLock { served -> ClusterActorSystem?? in
            guard let host = served.host else { return .some(nil) }
            guard served.running < ActorCall.maxCallsPerConnection else { return nil }
            served.running += 1
            return host
        }
        switch host {
        case nil:
            try? connection.send(WireError(code: .busy, message: "too many calls in flight on this link", id: id).line)
        case .some(nil):
            try? connection.send(ActorReply.refused(.actorNotFound(call.actor)).reply(id: id).line)
        case .some(let host?):
            Task {
                let reply = await host.execute(call).reply(id: id)
                var line = reply.line
                if line.count > lineRoom {
                    line = Reply.threw(id: id, type: ActorReply.resultNotSent, message: "the result is more than a line holds").line
                }
                // Waits for room as the node's replies do; the call counts among the running
                // until its reply has left, so at most a window of replies wait.
                _ = try? await connection.sendWhenRoom(line)
                callsFromNode.withLock { $0.running -= 1 }
            }
        }
    }

    /// Sends a spawn or a lookup; a node's refusal comes back as the `ClusterActorSystemError` it means.
    private func actorRequest(id: Int, _ request: Request, timeout: Duration? = nil) async throws -> Reply {
        do {
            return try await self.request(id: id, request, timeout: timeout, liveness: Self.actorLiveness)
        } catch let error as WireError {
            throw ClusterActorSystemError(error)
        } catch where error is CancellationError || error is TimeoutError || error is PeerUnresponsive {
            post(.cancel(id: id))  // given up here: the node stops the factory, should it still be alive
            throw error
        }
    }
}

/// The calls a node makes of our actors over one link: the system that hosts them (none
/// until the link serves calls) and how many run.
struct CallsFromNode {
    var host: ClusterActorSystem?
    var running = 0
}
