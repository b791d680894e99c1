/// One call of a distributed method as it travels (`call`): the actor (its system's name and
/// its number there), the method (the compiler's identifier of its thunk, the same in every
/// copy of one build), the type arguments (only `selfType` is ever accepted) and the arguments
/// as JSON, in order.
package struct ActorCall: Sendable, Equatable {
    package let system: String
    package let number: Int
    package let target: String
    package let generics: [String]
    package let arguments: [JSONValue]

    /// The type argument that stands for the actor called (a `@Resolvable` stub's `Self`).
    package static let selfType = "Self"
    /// The longest target taken (real ones are well under 300 bytes).
    package static let maxTargetBytes = 1024
    package static let maxGenerics = 4
    package static let maxArguments = 64
    /// The most calls (and spawns) a node runs at once for one connection: it refuses more
    /// (`busy`), and a caller keeps the rest waiting, in turn. Enough that a link is rarely
    /// idle between calls; replies and calls that do not fit the queue to a slow reader wait
    /// for room (`Connection.sendWhenRoom`) rather than ending the link.
    package static let maxCallsPerConnection = 256

    package init(system: String, number: Int, target: String, generics: [String] = [], arguments: [JSONValue]) {
        self.system = system
        self.number = number
        self.target = target
        self.generics = generics
        self.arguments = arguments
    }

    /// The `call` line of request `id`.
    package func line(id: Int) -> [UInt8] {
        var actor = JSONLine()
        actor.add("system", system)
        actor.add("number", number)
        var json = JSONLine(type: "call", id: id)
        json.add("actor", object: actor)
        json.add("target", target)
        if !generics.isEmpty { json.add("generics", strings: generics) }
        json.add("arguments", value: .array(arguments))
        return json.line
    }
}

extension WireFields {
    /// A `call` request's fields, validated.
    func actorCall() throws(WireError) -> ActorCall {
        let actor = try object("actor")
        let system = try actor.string("system")
        guard ActorSpawn.isName(system) else {
            throw .badRequest("\"actor.system\" must be 1 to \(ActorSpawn.maxNameBytes) bytes of printable text", id: id)
        }
        let target = try string("target")
        guard !target.isEmpty, target.utf8.count <= ActorCall.maxTargetBytes else {
            throw .badRequest("\"target\" must be 1 to \(ActorCall.maxTargetBytes) bytes", id: id)
        }
        var generics: [String] = []
        switch fields["generics"] {
        case nil, .null?: break
        case .array(let names)? where names.count <= ActorCall.maxGenerics:
            for name in names {
                guard case .string(let text) = name, text.utf8.count <= 256 else {
                    throw .badRequest("\"generics\" must be an array of short strings", id: id)
                }
                generics.append(text)
            }
        default: throw .badRequest("\"generics\" must be an array of at most \(ActorCall.maxGenerics) strings", id: id)
        }
        guard case .array(let arguments)? = fields["arguments"], arguments.count <= ActorCall.maxArguments else {
            throw .badRequest("\"arguments\" must be an array of at most \(ActorCall.maxArguments) values", id: id)
        }
        return ActorCall(system: system, number: try actor.int("number", in: 1...Int.max), target: target,
                         generics: generics, arguments: arguments)
    }
}
