import SkyNetWire

extension ActorCall {
    /// A call of the actor `actor`.
    package init(actor: ClusterActorID, target: String, generics: [String] = [], arguments: [JSONValue]) {
        self.init(system: actor.system, number: actor.number, target: target, generics: generics, arguments: arguments)
    }

    /// The actor called.
    package var actor: ClusterActorID { ClusterActorID(system: system, number: number) }
}
