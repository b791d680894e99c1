/// Placeholder for helper E's `CommandJob` (replaced by wt-e): the interface only.
public struct CommandJob: Job {
    public static let defaultMaxOutput = 262_144
    public let name: String
    public let command: CommandTemplate
    public let maxOutput: Int
    public let killGrace: Duration

    public init(name: String, command: CommandTemplate, maxOutput: Int = CommandJob.defaultMaxOutput, killGrace: Duration = .seconds(2)) {
        self.name = name
        self.command = command
        self.maxOutput = maxOutput
        self.killGrace = killGrace
    }

    public var summary: String { command.text }

    public func run(_ request: JobRequest) async throws -> String {
        throw ScanFailure(code: "task-failed", message: "not built yet")
    }
}
