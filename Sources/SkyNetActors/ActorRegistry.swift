import Distributed
import SkyNetAuth
import SkyNetRuntime
import SkyNetWire

/// The distributed actor types a system makes when another system asks it to (`spawn`), by
/// name, each with its factory. A node hosts only what its program declared here: a spawn of
/// any other name is refused, never guessed at.
///
/// Every process of a cluster declares the same types (they run the same program): the
/// registry's `build` says which types those are, and a link between two programs that declare
/// different ones is refused at the handshake.
public struct ActorRegistry: Sendable {
    /// A type or name that cannot be declared, saying why.
    public struct Refusal: Error, CustomStringConvertible, Equatable, Sendable {
        /// Why the declaration was refused, and what to do.
        public let description: String
    }

    /// One declared type: how to make an actor of it from the spawn's arguments.
    struct Declaration: Sendable {
        let type: any DistributedActor.Type
        /// Makes the actor and says its ID (the registry's types all have `ClusterActorID`s).
        let make: @Sendable (JSONValue?, ClusterActorSystem) async throws -> (any DistributedActor, ClusterActorID)
    }

    /// The longest type name (it travels in every spawn).
    package static let maxNameBytes = 128

    private(set) var declarations: [String: Declaration] = [:]

    /// A registry that declares nothing: a system with it makes no actor for anyone.
    public init() {}

    /// Declares `type` under `name` (by default the type's own name): a spawn of it runs `make`.
    public mutating func declare<Act: DistributedActor>(
        _ type: Act.Type, as name: String? = nil, make: @escaping @Sendable (ClusterActorSystem) async throws -> Act
    ) throws(Refusal) where Act.ActorSystem == ClusterActorSystem {
        try add(type, as: name) { _, system in
            let actor = try await make(system)
            return (actor, actor.id)
        }
    }

    /// Declares `type` under `name` (by default the type's own name), made from arguments that
    /// travel with each spawn (`spawn(_:with:on:name:)`).
    public mutating func declare<Act: DistributedActor, Arguments: Codable & Sendable>(
        _ type: Act.Type, as name: String? = nil, arguments: Arguments.Type,
        make: @escaping @Sendable (Arguments, ClusterActorSystem) async throws -> Act
    ) throws(Refusal) where Act.ActorSystem == ClusterActorSystem {
        try add(type, as: name) { value, system in
            let arguments: Arguments
            do {
                arguments = try CodableJSON.decode(Arguments.self, from: value ?? .null, userInfo: [.actorSystemKey: system])
            } catch {
                throw SpawnArgumentsRefusal(reason: "the spawn arguments of \(Act.self): \(error)")
            }
            let actor = try await make(arguments, system)
            return (actor, actor.id)
        }
    }

    private mutating func add(
        _ type: any DistributedActor.Type, as given: String?,
        make: @escaping @Sendable (JSONValue?, ClusterActorSystem) async throws -> (any DistributedActor, ClusterActorID)
    ) throws(Refusal) {
        let name = given ?? String(describing: type)
        guard !name.isEmpty, name.utf8.count <= Self.maxNameBytes, name.unicodeScalars.allSatisfy(Self.isNameScalar) else {
            throw Refusal(description: "the actor type name '\(name)' must be 1 to \(Self.maxNameBytes) bytes of letters, digits, '.', '_', '-', '<', '>', ',' or ' '")
        }
        if let other = declarations[name] {
            throw Refusal(description: "the actor type name '\(name)' is declared twice (\(other.type) and \(type)); give one `as:` another name")
        }
        if let other = self.name(of: type) {
            throw Refusal(description: "the actor type \(type) is declared twice (as '\(other)' and '\(name)'): a spawn of it must name one")
        }
        declarations[name] = Declaration(type: type, make: make)
    }

    /// Letters and digits, and what a generic type's own name holds.
    private static func isNameScalar(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._-<>, ".unicodeScalars.contains(scalar)
    }

    /// The name `type` is declared under; nil for a type not declared.
    func name(of type: any DistributedActor.Type) -> String? {
        declarations.first { ObjectIdentifier($0.value.type) == ObjectIdentifier(type) }?.key
    }

    /// The declared names, sorted.
    public var names: [String] { declarations.keys.sorted() }

    /// Which types this registry declares, as 16 hex digits: the same in every copy of one
    /// program, different when a name stands for another type (another module, another build
    /// that renamed or moved it) or when the names differ.
    package var build: String {
        let text = declarations.sorted { $0.key < $1.key }
            .map { "\($0.key)=\(_mangledTypeName($0.value.type) ?? "?")" }.joined(separator: "\n")
        return String(Secrets.hex(SHA256.hash(Array(text.utf8))).prefix(16))
    }
}
