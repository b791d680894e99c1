import Foundation
@testable import SkyNet
@testable import SkyNetCommands
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetOptions
import Testing

/// `skynet node --work-dir`, `--max-file-size`, `--no-files`: parsed into the node's options,
/// with their defaults, ranges and refusals.
struct NodeFileOptionsTests {
    private func node(_ arguments: [String]) throws(UsageError) -> Node.Options {
        try NodeCommand(arguments: ["--port", "0"] + arguments).options
    }

    private func refusal(_ arguments: [String]) -> String? {
        do {
            _ = try node(arguments)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func withoutTheOptionsANodeTakesFilesUpTo1GInTheTemporaryDirectory() throws {
        let options = try node([])
        #expect(options.workDir == nil)
        #expect(options.maxFileSize == 1 << 30)
        #expect(options.acceptsFiles)
    }

    @Test func theOptionsReachTheNode() throws {
        let options = try node(["--work-dir", "/tmp", "--max-file-size", "2G", "--no-files"])
        #expect(options.workDir == "/tmp")
        #expect(options.maxFileSize == 2 << 30)
        #expect(!options.acceptsFiles)
        #expect(try node(["--max-file-size", "1T"]).maxFileSize == 1 << 40)
        #expect(try node(["--max-file-size", "300k"]).maxFileSize == 300 << 10)
        #expect(try node(["--max-file-size", "1"]).maxFileSize == 1)
    }

    @Test func aRelativeWorkDirIsMadeAbsolute() throws {
        let here = FileManager.default.currentDirectoryPath
        #expect(try node(["--work-dir", "."]).workDir == here + "/.")
    }

    @Test func aWorkDirThatIsNoDirectoryOrASizeOutOfRangeIsAUsageError() throws {
        #expect(refusal(["--work-dir", "/no/such/dir"]) == "option '--work-dir': /no/such/dir is not a directory")
        #expect(refusal(["--work-dir", "/etc/hostname"]) == "option '--work-dir': /etc/hostname is not a directory")
        #expect(refusal(["--work-dir", ""]) == "option '--work-dir' wants a directory")
        let range = "option '--max-file-size' wants a number of bytes in 1...1099511627776 (a K, M, G or T suffix counts 1024, 1048576, … bytes)"
        #expect(refusal(["--max-file-size", "0"]) == range + ", not '0'")
        #expect(refusal(["--max-file-size", "2T"]) == range + ", not '2T'")
        #expect(refusal(["--max-file-size", "1P"]) == range + ", not '1P'")
        #expect(refusal(["--max-file-size", "99999999999T"]) == range + ", not '99999999999T'", "an overflow is out of range")
    }

    @Test func helpStatesTheRangeAndTheDefault() {
        #expect(NodeCommand.help.contains("--max-file-size BYTES"))
        #expect(NodeCommand.help.contains("1...1T (default 1G;"))
        #expect(NodeCommand.help.contains("(default 1G;"))
        #expect(NodeCommand.usage.contains("[--work-dir DIR] [--max-file-size 1G] [--no-files]"))
        #expect(NodeCommand.stdioUsage.contains("[--work-dir DIR] [--max-file-size 1G] [--no-files]"))
    }

    @Test func aStdioNodeTakesThemToo() throws {
        let options = try NodeCommand(arguments: ["--stdio", "--max-file-size", "5M", "--no-files", "--work-dir", "/tmp"]).options
        #expect(options.maxFileSize == 5 << 20 && !options.acceptsFiles && options.workDir == "/tmp")
        let hex = Array(["--max-file-size", "7K"].joined(separator: "\0").utf8).map { String(format: "%02x", $0) }.joined()
        #expect(try NodeCommand(arguments: ["--stdio", "--stdio-args", hex]).options.maxFileSize == 7 << 10)
    }
}
