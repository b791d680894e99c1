import SkyNetRuntime

/// A request that a node make an actor of a type its program declared (`spawn`): the type's
/// declared name, a name to find the actor by later (optional, unique on that node) and the
/// arguments its factory takes (JSON; absent for a type declared without).
package struct ActorSpawn: Sendable, Equatable {
    package let type: String
    package let name: String?
    package let arguments: JSONValue?

    /// The longest type name or actor name taken.
    package static let maxNameBytes = 128

    package init(type: String, name: String? = nil, arguments: JSONValue? = nil) {
        self.type = type
        self.name = name
        self.arguments = arguments
    }

    /// The `spawn` line of request `id`.
    package func line(id: Int) -> [UInt8] {
        var json = JSONLine(type: "spawn", id: id)
        json.add("actor_type", type)
        if let name { json.add("name", name) }
        if let arguments { json.add("arguments", value: arguments) }
        return json.line
    }

    /// Whether `text` can name an actor or a type: 1 to 128 bytes, no control character (it
    /// goes into log lines and errors).
    package static func isName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maxNameBytes && !text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }
}

/// What a node's welcome says of the actors it hosts (`actors`): the name its actors' IDs
/// carry, and which types its program declares (`ActorRegistry.build`), so that a caller of
/// another build is refused at the handshake rather than mid-call.
package struct ActorOffer: Sendable, Equatable {
    package let system: String
    package let build: String

    package init(system: String, build: String) {
        self.system = system
        self.build = build
    }
}

extension WireFields {
    /// A `spawn` request's fields, validated.
    func actorSpawn() throws(WireError) -> ActorSpawn {
        return ActorSpawn(type: try actorType(optional: false) ?? "", name: try actorName(optional: true), arguments: fields["arguments"])
    }

    /// The `actor_type` of a `spawn` (required) or a `lookup` (optional), validated.
    func actorType(optional: Bool) throws(WireError) -> String? {
        guard let type = try optional ? optionalString("actor_type") : string("actor_type") else { return nil }
        guard ActorSpawn.isName(type) else {
            throw .badRequest("\"actor_type\" must be 1 to \(ActorSpawn.maxNameBytes) bytes of printable text", id: id)
        }
        return type
    }

    /// The `name` of a `spawn` (optional) or a `lookup` (required), validated.
    func actorName(optional: Bool) throws(WireError) -> String? {
        guard let name = try optionalString("name") else {
            if optional { return nil }
            throw .badRequest("\"name\" is missing: the name of the actor to find", id: id)
        }
        guard ActorSpawn.isName(name) else {
            throw .badRequest("\"name\" must be 1 to \(ActorSpawn.maxNameBytes) bytes of printable text", id: id)
        }
        return name
    }

    /// A pong's `actors`: how many of each type the node hosts, at most 256 types; nil when absent.
    func actorCounts() throws(WireError) -> [String: Int]? {
        guard let value = fields["actors"], value != .null else { return nil }
        guard case .object(let object) = value, object.count <= 256 else {
            throw .badRequest("\"actors\" must be an object of at most 256 types", id: id)
        }
        var counts: [String: Int] = [:]
        for (type, count) in object {
            guard ActorSpawn.isName(type), case .int(let number) = count, number >= 0 else {
                throw .badRequest("\"actors\" must map type names to counts", id: id)
            }
            counts[type] = number
        }
        return counts
    }

    /// A welcome's `actors`, validated; nil from a node that hosts none.
    func actorOffer() throws(WireError) -> ActorOffer? {
        guard let value = fields["actors"], value != .null else { return nil }
        guard case .object = value else { throw .badRequest("\"actors\" must be an object", id: id) }
        let offer = try object("actors")
        let system = try offer.string("system"), build = try offer.string("build")
        guard ActorSpawn.isName(system), (1...64).contains(build.utf8.count), build.utf8.allSatisfy({ Secrets.hexValue($0) != nil }) else {
            throw .badRequest("\"actors\" needs a \"system\" name and a \"build\" of 1 to 64 hex digits", id: id)
        }
        return ActorOffer(system: system, build: build)
    }
}
