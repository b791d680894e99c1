import SkyNetOptions
import SkyNetWork

/// The `--job NAME=COMMAND` values of a command line, made into command jobs.
enum JobDeclarations {
    /// The most jobs one command line declares (the welcome lists them all in one line).
    static let maxJobs = 64
    /// The longest command, in bytes.
    static let maxCommandBytes = 4096
    /// `--max-output`: a result travels in one wire line of 1 MiB, escaped as JSON.
    static let maxOutputRange = 1...(512 * 1024)

    /// `registry` with a `CommandJob` added for every `NAME=COMMAND` in `values`.
    static func register(_ values: [String], in registry: JobRegistry, maxOutput: Int) throws(UsageError) -> JobRegistry {
        guard values.count <= maxJobs else { throw UsageError("option '--job' is given \(values.count) times; at most \(maxJobs) jobs") }
        var registry = registry
        for value in values {
            let (name, command) = try parse(value)
            try checked(value) { try registry.register(name, CommandJob(name: name, command: command, maxOutput: maxOutput)) }
        }
        return registry
    }

    /// Splits `NAME=COMMAND` and checks both halves.
    static func parse(_ value: String) throws(UsageError) -> (name: String, command: CommandTemplate) {
        guard let equals = value.firstIndex(of: "=") else {
            throw UsageError("option '--job' wants NAME=COMMAND, as in --job sum='sha256sum {}', not '\(value)'")
        }
        let name = String(value[..<equals]), text = String(value[value.index(after: equals)...])
        try checked(value) { try JobRegistry.validate(name) }
        guard name != JobRegistry.scan else {
            throw UsageError("option '--job \(value)': 'scan' is the built-in simulated scan and cannot be redeclared; choose another name")
        }
        guard text.utf8.count <= maxCommandBytes else {
            throw UsageError("option '--job \(name)=…': the command is longer than \(maxCommandBytes) bytes")
        }
        return (name, try checked(value) { try CommandTemplate(text) })
    }

    /// What `body` returns; an error it throws becomes the usage error of `--job value`.
    static func checked<T>(_ value: String, _ body: () throws -> T) throws(UsageError) -> T {
        do {
            return try body()
        } catch {
            throw UsageError("option '--job \(value)': \(error)")
        }
    }
}
