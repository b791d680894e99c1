import SkyNetWire

/// One call of a distributed method as it travels: the actor, the method (the compiler's
/// identifier of its thunk, the same in every copy of one build) and the arguments in order.
package struct ActorCall: Sendable, Equatable {
    package let actor: ClusterActorID
    package let target: String
    /// The call's type arguments: only `selfType`, a `@Resolvable` stub's, is ever accepted.
    package var generics: [String] = []
    package let arguments: [JSONValue]

    /// The type argument that stands for the actor called.
    package static let selfType = "Self"
}

/// What became of a call on the system that hosts its actor.
package enum ActorReply: Sendable, Equatable {
    /// The method returned this value (`nil`: it returns nothing).
    case returned(JSONValue?)
    /// The method threw: the error's type and description, as the host saw them.
    case threw(type: String, message: String)
    /// The call never ran: no such actor, no such method, arguments that did not decode.
    case refused(ClusterActorSystemError)
}

/// How a system reaches the system that hosts an actor (a link to its node).
package protocol ActorCallChannel: Sendable {
    func call(_ call: ActorCall) async throws -> ActorReply
}
