import SkyNetWork

/// An error reply of the protocol: `{"type":"error","code":…,"message":…,"id":…}`.
///
/// Thrown by the decoders for a line that breaks the protocol, and sent back as it is.
package struct WireError: Error, Equatable, Sendable, CustomStringConvertible {
    package let code: FailureCode
    package let message: String?
    /// The request's id, when it could be read: the error then ends that request.
    package let id: Int?

    package init(code: FailureCode, message: String? = nil, id: Int? = nil) {
        self.code = code
        self.message = message
        self.id = id
    }

    package static func badRequest(_ message: String, id: Int? = nil) -> WireError {
        WireError(code: .badRequest, message: message, id: id)
    }

    package var description: String { message.map { "\(code): \($0)" } ?? code.rawValue }

    /// The error as a line to send.
    package var line: [UInt8] {
        var json = JSONLine(type: "error")
        json.add("code", code.rawValue)
        if let message { json.add("message", message) }
        if let id { json.add("id", id) }
        return json.line
    }
}
