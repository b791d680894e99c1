import SkyNetWork

/// An error reply of the protocol: `{"type":"error","code":…,"message":…,"id":…}`.
///
/// Thrown by the decoders for a line that breaks the protocol, and sent back as it is.
public struct WireError: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: FailureCode
    public let message: String?
    /// The request's id, when it could be read: the error then ends that request.
    public let id: Int?

    public init(code: FailureCode, message: String? = nil, id: Int? = nil) {
        self.code = code
        self.message = message
        self.id = id
    }

    public static func badRequest(_ message: String, id: Int? = nil) -> WireError {
        WireError(code: .badRequest, message: message, id: id)
    }

    public var description: String { message.map { "\(code): \($0)" } ?? code.rawValue }

    /// The error as a line to send.
    public var line: [UInt8] {
        var json = JSONLine(type: "error")
        json.add("code", code.rawValue)
        if let message { json.add("message", message) }
        if let id { json.add("id", id) }
        return json.line
    }
}
