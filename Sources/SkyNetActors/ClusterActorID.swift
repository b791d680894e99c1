import SkyNetWire

/// Which actor, on which system: what a `distributed actor` of a `ClusterActorSystem` is
/// called by. It is `Codable`, so a reference to an actor can be an argument or a result and be
/// called back from wherever it arrives.
public struct ClusterActorID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The name of the system that hosts the actor.
    public let system: String
    /// The actor's number on that system, never reused while the system runs.
    public let number: Int

    /// The ID of actor `number` of the system `system`.
    public init(system: String, number: Int) {
        self.system = system
        self.number = number
    }

    /// `system/number`, as errors and logs say it.
    public var description: String { "\(system)/\(number)" }
}

extension ActorCall {
    /// A call of the actor `actor`.
    package init(actor: ClusterActorID, target: String, generics: [String] = [], arguments: [JSONValue]) {
        self.init(system: actor.system, number: actor.number, target: target, generics: generics, arguments: arguments)
    }

    /// The actor called.
    package var actor: ClusterActorID { ClusterActorID(system: system, number: number) }
}
