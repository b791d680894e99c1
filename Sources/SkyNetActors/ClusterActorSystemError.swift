import SkyNetWire
import SkyNetWork

/// Why a call to a distributed actor did not return.
public enum ClusterActorSystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The system named in the actor's ID hosts no such actor (any more).
    case actorNotFound(ClusterActorID)
    /// This system has no link to the system that hosts the actor.
    case noRoute(system: String)
    /// The actor has no such distributed method: the two sides run different builds.
    case unknownTarget(String)
    /// An argument or the result did not encode or decode (the coding path says which).
    case badValue(String)
    /// Generic distributed methods are not supported: their type arguments would have to be
    /// looked up by name from what the wire says.
    case genericMethod(String)
    /// The method ran and threw: the error's type and description, as its host saw them.
    case remote(type: String, message: String)
    /// The system asked to make an actor has no such type declared (`ActorRegistry`).
    case undeclaredType(String)
    /// The system asked to make an actor hosts its most already.
    case tooManyActors(String)
    /// Another actor of the system asked already has that name.
    case nameTaken(String)
    /// No linked node can take the spawn (none linked, or none of that name).
    case noNode(String)
    /// The call took longer than its deadline (this long); it is cancelled on its node, where
    /// it may have run.
    case deadline(Duration)
    /// The link to the actor's node ended while the call was in flight: it may have run.
    case linkLost(node: String, reason: String)
    /// The node refused the call before it ran, for a reason of its own: `busy` (it drains, or
    /// the link holds its most calls), `unknown-type` (it is older than actor calls) …
    case refused(code: String, message: String)

    /// The protocol's code for a refusal before the method ran (`remote` and `noRoute` never
    /// travel: they are the caller's own).
    package var code: FailureCode {
        switch self {
        case .actorNotFound: .actorNotFound
        case .unknownTarget: .unknownTarget
        case .genericMethod: .genericMethod
        case .badValue, .noRoute, .remote, .noNode, .deadline, .linkLost: .badValue
        case .undeclaredType: .undeclaredActor
        case .tooManyActors: .tooManyActors
        case .nameTaken: .nameTaken
        case .refused(let code, _): FailureCode(rawValue: code)
        }
    }

    /// What the refusal's message says on the wire: the particulars, without the words the
    /// caller's `description` puts around them.
    package var detail: String {
        switch self {
        case .actorNotFound(let id): "no actor \(id)"
        case .noRoute(let system): system
        case .undeclaredType(let name), .nameTaken(let name): name
        case .tooManyActors(let reason), .noNode(let reason), .linkLost(_, let reason): reason
        case .deadline(let limit): "\(limit)"
        case .unknownTarget(let target), .genericMethod(let target): target
        case .badValue(let reason): reason
        case .remote(_, let message), .refused(_, let message): message
        }
    }

    /// The reason, for a person.
    public var description: String {
        switch self {
        case .actorNotFound(let id): "no actor \(id)"
        case .noRoute(let system): "no link to the system \(system)"
        case .unknownTarget(let target): "the actor has no distributed method \(target) (is the other side the same build?)"
        case .badValue(let reason): "a value of the call did not travel: \(reason)"
        case .genericMethod(let target): "generic distributed methods are not supported (\(target))"
        case .undeclaredType(let name): "no actor type '\(name)' is declared there (declare it in the program's ActorRegistry)"
        case .tooManyActors(let reason): "no more actors there: \(reason)"
        case .nameTaken(let name): "an actor named '\(name)' is there already"
        case .noNode(let reason): "no node to place the actor on: \(reason)"
        case .deadline(let limit): "the call took longer than its deadline (\(limit)); it may have run"
        case .linkLost(let node, let reason): "the link to \(node) ended while the call was in flight (\(reason)); it may have run"
        case .remote(let type, let message): "the remote call threw \(type): \(message)"
        case .refused(let code, let message): "the node refused the call (\(code)): \(message)"
        }
    }
}
