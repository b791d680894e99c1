import Foundation
import SkyNet
import SkyNetRuntime

/// A helper program run to its end (ssh-keygen, ssh): how it ended and what it printed.
package struct ToolRun: Sendable {
    package let exit: ChildExit
    package let stdout: String
    package let stderr: String

    /// The last non-empty line of stderr (where ssh says why it failed). ssh ends its lines
    /// with CR LF, one Character to Swift: lines are split on any newline.
    package var lastErrorLine: String? {
        stderr.split(whereSeparator: \.isNewline).last { !$0.allSatisfy(\.isWhitespace) }.map(String.init)
    }

    /// Runs `executable` (a path, or a name looked up in PATH) with `arguments`, no shell,
    /// stdin from /dev/null, killing it (and its group) after `limit`. Output is kept up to
    /// 1 MiB a stream.
    package static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, limit: Duration = .seconds(20)
    ) async throws -> ToolRun {
        var options = ChildProcess.Options(arguments: arguments, environment: environment)
        options.searchPath = true
        options.ownProcessGroup = true
        options.endGroupOnExit = true
        options.stdout = .bytes(limit: 1 << 20)
        options.stderr = .bytes(limit: 1 << 20)
        let child = try await onBlockingPool { [options] in try ChildProcess.spawn(executable, options) }
        let exit: ChildExit
        do {
            exit = try await withTimeout(limit) { await child.exit.value }
        } catch {
            await child.stop(grace: .zero)
            throw ToolRunError(description: "\(executable) \(arguments.joined(separator: " ")) did not end within \(limit)")
        }
        // A descendant outside the group could hold the outputs open: do not wait for it long.
        child.abandonOutput(after: .seconds(2))
        let output = await child.capturedOutput
        return ToolRun(
            exit: exit,
            stdout: String(decoding: output?.stdout?.bytes ?? [], as: UTF8.self),
            stderr: String(decoding: output?.stderr?.bytes ?? [], as: UTF8.self))
    }
}

/// A helper program that did not run as a test needed.
package struct ToolRunError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(description: String) { self.description = description }
}
