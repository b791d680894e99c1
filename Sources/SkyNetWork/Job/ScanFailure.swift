/// Why a system could not complete a scan, in the words of the wire protocol's failure codes.
public struct ScanFailure: Error, CustomStringConvertible, Equatable, Sendable {
    /// The protocol's failure code: `task-failed`, `busy`, `cancelled`, or a transport code.
    public let code: FailureCode
    public let message: String

    public init(code: FailureCode, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func busy(_ system: String, capacity: Int) -> ScanFailure {
        ScanFailure(code: .busy, message: "\(system) already runs \(capacity) tasks")
    }
}
