import Foundation
import Testing

extension ProcessTests {
    /// The usage synopses in docs/ are what `skynet COMMAND --help` prints: each command's block,
    /// from `usage: skynet COMMAND` to its first empty line, appears in the manual word for word.
    @Suite(.timeLimit(.minutes(2)))
    struct DocsUsageTests {
        static let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs")

        @Test(arguments: ["scan", "node", "status"])
        func theManualShowsTheUsageThatHelpPrints(command: String) async throws {
            let help = try await runSkynet([command, "--help"])
            #expect(help.status == 0)
            let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            let start = try #require(lines.firstIndex { $0.hasPrefix("usage: skynet \(command)") }, "\(help.stdout)")
            let end = lines[start...].firstIndex { $0.trimmingCharacters(in: .whitespaces).isEmpty } ?? lines.endIndex
            let usage = lines[start..<end].joined(separator: "\n")
            let pages = try FileManager.default.contentsOfDirectory(atPath: Self.docs.path).filter { $0.hasSuffix(".md") }
            let holding = try pages.filter { page in
                try String(contentsOf: Self.docs.appendingPathComponent(page), encoding: .utf8).contains("```\n\(usage)\n```")
            }
            #expect(!holding.isEmpty, "no page of docs/ shows this usage as --help prints it:\n\(usage)")
        }
    }
}
