import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension NodeStdioProcessTests {
    /// `taskset -c N skynet node --stdio` may run on one processor: its welcome says capacity 1.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset"), "needs /usr/bin/taskset (apt-get install util-linux)"))
    func aNodeBoundToOneProcessorWelcomesWithCapacityOne() async throws {
        let first = try #require(CoreCountTestsSupport.firstAllowedProcessor())
        let input = try ChildProcess.makePipe()
        var options = ChildProcess.Options(arguments: ["-c", "\(first)", skynetBinary.path, "node", "--stdio"],
                                           environment: ProcessInfo.processInfo.environment)
        options.stdin = .descriptor(input.read)
        options.stdout = .lines(keep: 100)
        options.stderr = .lines(keep: 100)
        let child: ChildProcess
        do { child = try ChildProcess.spawn("/usr/bin/taskset", options) } catch {
            close(input.read)
            close(input.write)
            throw error
        }
        close(input.read)
        // The hello, then the end of input: the node welcomes and exits.
        _ = Array((Self.hello + "\n").utf8).withUnsafeBytes { writeFully($0, to: input.write) }
        close(input.write)
        do {
            let exit = try await withTimeout(.seconds(20)) { await child.exit.value }
            #expect(exit.reason == .exited(0), "\(child.stderrLines?.lines ?? [])")
        } catch {
            await child.stop(grace: .zero)
            throw error
        }
        await child.stdoutLines?.closed()
        let welcome = child.stdoutLines?.lines.first ?? ""
        #expect(welcome.hasPrefix(#"{"type":"welcome""#) && welcome.contains(#""capacity":1,"#), "\(welcome)")
    }
}

/// The first processor this process may run on, from `Cpus_allowed_list` (`0-1,4`) in
/// /proc/self/status, for `taskset`.
enum CoreCountTestsSupport {
    static func firstAllowedProcessor() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) else { return nil }
        return Int(line.dropFirst("Cpus_allowed_list:".count).drop { $0 == " " || $0 == "\t" }.prefix { $0.isNumber })
    }
}
