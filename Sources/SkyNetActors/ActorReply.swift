import SkyNetWire

/// What became of a call on the system that hosts its actor.
package enum ActorReply: Sendable, Equatable {
    /// The method returned this value (`nil`: it returns nothing).
    case returned(JSONValue?)
    /// The method threw: the error's type and description, as the host saw them.
    case threw(type: String, message: String)
    /// The call never ran: no such actor, no such method, arguments that did not decode.
    case refused(ClusterActorSystemError)

    /// What a method "threw" when it ran but its result could not be sent back (it did not
    /// encode, or was too large for a line).
    package static let resultNotSent = "ResultNotSent"
}

/// How a system reaches the system that hosts an actor (a link to its node).
package protocol ActorCallChannel: Sendable {
    /// Whether the system at the other end said it stops: no actor is placed there then.
    var isDraining: Bool { get }
    /// Sends `call` and awaits its reply, for at most `timeout` (then it throws `TimeoutError`
    /// and cancels the call at the other end).
    func call(_ call: ActorCall, timeout: Duration) async throws -> ActorReply
    /// Asks the system at the other end to make an actor: its ID, or why not (a
    /// `ClusterActorSystemError`; `remote` for what the factory threw).
    func spawn(_ spawn: ActorSpawn, timeout: Duration) async throws -> ClusterActorID
    /// The actor of the declared type `type` the system at the other end spawned with `name`;
    /// nil: it has none.
    func lookup(name: String, type: String) async throws -> ClusterActorID?
}

extension ActorReply {
    /// The reply line that tells the caller of request `id`.
    package func reply(id: Int) -> Reply {
        switch self {
        case .returned(let value): .returned(id: id, value: value)
        case .threw(let type, let message): .threw(id: id, type: type, message: message)
        case .refused(let refusal): .error(WireError(code: refusal.code, message: refusal.detail, id: id))
        }
    }

    /// What a node's reply to `call` says; nil for a reply that is no answer to a call.
    package init?(_ reply: Reply, to call: ActorCall) {
        switch reply {
        case .returned(_, let value): self = .returned(value)
        case .threw(_, let type, let message): self = .threw(type: type, message: message)
        case .error(let error): self = .refused(ClusterActorSystemError(error, call: call))
        default: return nil
        }
    }
}

extension ClusterActorSystemError {
    /// What a node's `error` reply to a call (`call`), a spawn or a lookup says.
    package init(_ error: WireError, call: ActorCall? = nil) {
        let message = error.message ?? ""
        switch error.code {
        case .actorNotFound: self = call.map { .actorNotFound($0.actor) } ?? .refused(code: error.code.rawValue, message: message)
        case .unknownTarget: self = .unknownTarget(call?.target ?? message)
        case .genericMethod: self = .genericMethod(message)
        case .badValue: self = .badValue(message)
        case .undeclaredActor: self = .undeclaredType(message)
        case .tooManyActors: self = .tooManyActors(message)
        case .nameTaken: self = .nameTaken(message)
        default: self = .refused(code: error.code.rawValue, message: message)
        }
    }
}
