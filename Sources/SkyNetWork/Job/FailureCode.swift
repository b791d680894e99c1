/// A failure or error code of the wire protocol (docs/PROTOCOL.md), its raw value spelled as on
/// the wire. A code this build does not know (a newer peer's) is kept as it came, in `other`.
public enum FailureCode: Sendable, Hashable, RawRepresentable, ExpressibleByStringLiteral, CustomStringConvertible {
    // Failures of a task.
    case taskFailed, busy, cancelled, deadline, unknownJob, badReply
    // Failures of a task's files.
    case noSpace, fileTooLarge, fileChanged, missingReturn, badFile
    // Errors of a connection or a request.
    case badRequest, unknownType, frameTooLarge, helloRequired, unsupportedVersion, unauthorized
    // Refusals of an actor call, before its method ran.
    case actorNotFound, unknownTarget, badValue, genericMethod
    // Refusals of an actor spawn.
    case undeclaredActor, tooManyActors, nameTaken
    case other(String)

    private static let known: [FailureCode] = [
        .taskFailed, .busy, .cancelled, .deadline, .unknownJob, .badReply,
        .noSpace, .fileTooLarge, .fileChanged, .missingReturn, .badFile,
        .badRequest, .unknownType, .frameTooLarge, .helloRequired, .unsupportedVersion, .unauthorized,
        .actorNotFound, .unknownTarget, .badValue, .genericMethod,
        .undeclaredActor, .tooManyActors, .nameTaken,
    ]

    /// The code spelled `rawValue` on the wire; an unknown spelling is kept in `other`.
    public init(rawValue: String) {
        self = Self.known.first { $0.rawValue == rawValue } ?? .other(rawValue)
    }

    /// `"busy"` for `.busy`: the wire spelling as a literal.
    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }

    /// The code as the wire spells it (`task-failed`).
    public var rawValue: String {
        switch self {
        case .taskFailed: "task-failed"
        case .busy: "busy"
        case .cancelled: "cancelled"
        case .deadline: "deadline"
        case .unknownJob: "unknown-job"
        case .badReply: "bad-reply"
        case .noSpace: "no-space"
        case .fileTooLarge: "file-too-large"
        case .fileChanged: "file-changed"
        case .missingReturn: "missing-return"
        case .badFile: "bad-file"
        case .badRequest: "bad-request"
        case .unknownType: "unknown-type"
        case .frameTooLarge: "frame-too-large"
        case .helloRequired: "hello-required"
        case .unsupportedVersion: "unsupported-version"
        case .unauthorized: "unauthorized"
        case .actorNotFound: "actor-not-found"
        case .unknownTarget: "unknown-target"
        case .badValue: "bad-value"
        case .genericMethod: "generic-method"
        case .undeclaredActor: "undeclared-actor"
        case .tooManyActors: "too-many-actors"
        case .nameTaken: "name-taken"
        case .other(let code): code
        }
    }

    /// The wire spelling.
    public var description: String { rawValue }
}
