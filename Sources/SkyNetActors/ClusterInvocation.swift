import Distributed
import SkyNetRuntime
import SkyNetWire

/// Records one call's arguments as JSON values, in order, for the wire.
public struct ClusterInvocationEncoder: DistributedTargetInvocationEncoder {
    /// Arguments and results are `Codable`, and travel as JSON.
    public typealias SerializationRequirement = any Codable

    var arguments: [JSONValue] = []
    /// The type arguments: `Self` for a `@Resolvable` stub's (the actor called), other types
    /// by their mangled names, which a host refuses.
    var generics: [String] = []

    /// Notes a type argument (a host accepts only a `@Resolvable` stub's `Self`).
    public mutating func recordGenericSubstitution<T>(_ type: T.Type) throws {
        generics.append(type is any DistributedActor.Type ? ActorCall.selfType : _mangledTypeName(type) ?? "\(type)")
    }

    /// Encodes the next argument; throws `badValue` (with its coding path) if it cannot travel.
    public mutating func recordArgument<Value: Codable>(_ argument: RemoteCallArgument<Value>) throws {
        do {
            arguments.append(try CodableJSON.encode(argument.value))
        } catch {
            throw ClusterActorSystemError.badValue("argument \(argument.label ?? argument.name): \(error)")
        }
    }

    /// Not sent: a host says what a method threw by its type's name and description.
    public mutating func recordErrorType<E: Error>(_ type: E.Type) throws {}
    /// Not sent: the caller decodes the result as the type it expects.
    public mutating func recordReturnType<R: Codable>(_ type: R.Type) throws {}
    /// Nothing to finish: the arguments are encoded as they are recorded.
    public mutating func doneRecording() throws {}
}

/// Reads a call's arguments back on the system that hosts the actor; actor references among
/// them resolve through that system.
public struct ClusterInvocationDecoder: DistributedTargetInvocationDecoder {
    /// Arguments and results are `Codable`, and travel as JSON.
    public typealias SerializationRequirement = any Codable

    let arguments: [JSONValue]
    let generics: [String]
    let system: ClusterActorSystem
    /// The type of the actor called: what a `@Resolvable` stub's `Self` stands for here.
    let actorType: Any.Type
    var next = 0

    /// The host never looks a type up by a name the wire gave: the one type argument a call may
    /// have is a `@Resolvable` stub's `Self`, which is the actor's own type here (the runtime
    /// then checks that it conforms). A method with type parameters of its own is refused.
    public mutating func decodeGenericSubstitutions() throws -> [Any.Type] {
        guard generics.allSatisfy({ $0 == ActorCall.selfType }), generics.count <= 1 else {
            throw CallRefusal(reason: .genericMethod("type arguments \(generics.joined(separator: ", "))"))
        }
        return generics.map { _ in actorType }
    }

    /// The next argument; throws `badValue` when there is none or it does not decode.
    public mutating func decodeNextArgument<Argument: Codable>() throws -> Argument {
        guard next < arguments.count else {
            throw CallRefusal(reason: .badValue("the call has \(arguments.count) argument(s), the method takes more"))
        }
        defer { next += 1 }
        do {
            return try CodableJSON.decode(Argument.self, from: arguments[next], userInfo: [.actorSystemKey: system])
        } catch {
            throw CallRefusal(reason: .badValue("argument \(next + 1): \(error)"))
        }
    }

    /// Not sent (see `ClusterInvocationEncoder.recordErrorType`).
    public mutating func decodeErrorType() throws -> Any.Type? { nil }
    /// Not sent (see `ClusterInvocationEncoder.recordReturnType`).
    public mutating func decodeReturnType() throws -> Any.Type? { nil }
}

/// Takes what the method returned or threw on the host, as the reply to send back.
public final class ClusterResultHandler: DistributedTargetInvocationResultHandler {
    /// Arguments and results are `Codable`, and travel as JSON.
    public typealias SerializationRequirement = any Codable

    /// Set once, by the one call of `onReturn…` or `onThrow` that ends the invocation;
    /// read after it (the lock only makes that hand-over visible across threads).
    private let reply = Locked<ActorReply?>(nil)
    private let target: String

    init(target: String) {
        self.target = target
    }

    var result: ActorReply? { reply.withLock { $0 } }

    /// The method returned `value`: encoded for the reply.
    public func onReturn<Success: Codable>(value: Success) async throws {
        let encoded: ActorReply
        do {
            encoded = .returned(try CodableJSON.encode(value))
        } catch {  // the method ran: its caller must not hear that it did not
            encoded = .threw(type: ActorReply.resultNotSent, message: "the result did not encode: \(error)")
        }
        reply.withLock { $0 = encoded }
    }

    /// The method returned nothing.
    public func onReturnVoid() async throws {
        reply.withLock { $0 = .returned(nil) }
    }

    /// The method threw, or the call could not run: the reply says which.
    public func onThrow<Err: Error>(error: Err) async throws {
        let answer: ActorReply = if let refusal = error as? CallRefusal {
            .refused(refusal.reason)
        } else if error is ExecuteDistributedTargetError {
            .refused(.unknownTarget(target))
        } else {  // the method ran and threw (a refusal of a call it made itself included)
            .threw(type: String(describing: type(of: error as Any)), message: String(String(describing: error).prefix(1024)))
        }
        reply.withLock { $0 = answer }
    }
}

/// A call refused before its method ran (its arguments, its type arguments): kept apart from
/// what the method itself throws, which the caller hears as having run.
struct CallRefusal: Error {
    let reason: ClusterActorSystemError
}
