/// Why a system could not complete a scan, in the words of the wire protocol's failure codes.
package struct ScanFailure: Error, CustomStringConvertible, Equatable, Sendable {
    /// The protocol's failure code: `task-failed`, `busy`, `cancelled`, or a transport code.
    package let code: FailureCode
    package let message: String
    /// Whether running the task again cannot help (the coordinator's own refusal of a path or a
    /// file over its limit): the coordinator gives up after this attempt. Never on the wire.
    package let isFinal: Bool

    package init(code: FailureCode, message: String, isFinal: Bool = false) {
        self.code = code
        self.message = message
        self.isFinal = isFinal
    }

    package var description: String { message }

    package static func busy(_ system: String, capacity: Int) -> ScanFailure {
        ScanFailure(code: .busy, message: "\(system) already runs \(capacity) tasks")
    }

    /// A result longer than `--max-output` allows: the same words whoever produced it, a
    /// command here or a node elsewhere.
    package static func outputOver(_ maxOutput: Int) -> ScanFailure {
        ScanFailure(code: .taskFailed, message: "output over \(maxOutput) bytes (--max-output)")
    }
}
