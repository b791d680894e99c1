import Foundation

/// The protocol's current (and only) version.
public let wireVersion = 1

/// A message a client sends to a node (PROTOCOL.md).
public enum Request: Sendable, Equatable {
    case hello(version: Int, name: String, token: String?)
    case scan(id: Int, task: ScanTask)
    case cancel(id: Int)
    case ping(id: Int)

    /// The line to send.
    public var line: [UInt8] {
        switch self {
        case .hello(let version, let name, let token):
            var json = JSONLine(type: "hello")
            json.add("version", version)
            json.add("name", name)
            if let token { json.add("token", token) }
            return json.line
        case .scan(let id, let task):
            var body = JSONLine()
            body.add("id", task.id.wireText)
            body.add("input", task.input)
            body.add("duration", task.duration)
            var json = JSONLine(type: "scan")
            json.add("id", id)
            json.add("task", object: body)
            return json.line
        case .cancel(let id):
            var json = JSONLine(type: "cancel")
            json.add("id", id)
            return json.line
        case .ping(let id):
            var json = JSONLine(type: "ping")
            json.add("id", id)
            return json.line
        }
    }

    /// Decodes and validates one line. Throws the `WireError` to send back: `bad-request`
    /// (with the id when it could be read) or `unknown-type`.
    public static func decode(_ line: Data) throws(WireError) -> Request {
        let fields = try WireFields(line)
        let id = fields.optionalInt("id")
        switch try fields.type() {
        case "hello":
            guard let version = fields.optionalInt("version") else {
                throw .badRequest("hello needs an integer \"version\"")
            }
            return .hello(version: version, name: try fields.optionalString("name") ?? "",
                          token: try fields.optionalString("token"))
        case "scan":
            let id = try fields.requestID()
            return .scan(id: id, task: try fields.task(id: id))
        case "cancel":
            return .cancel(id: try fields.requestID())
        case "ping":
            return .ping(id: try fields.requestID())
        case let other:
            throw WireError(code: "unknown-type", message: "unknown type \"\(other)\"", id: id)
        }
    }
}
