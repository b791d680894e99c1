import Foundation
import Testing
@testable import SkyNet

extension ProcessTests {
    /// GNU parallel's replacement strings in `skynet scan --job`, on this process's own system
    /// and on a spawned node.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct PlaceholderProcessTests {
        /// Each input with what `echo {/} {.}` prints for it (GNU parallel prints the same).
        static let cases: [(input: String, expected: String)] = [
            ("photos/a.b.jpg", "a.b.jpg photos/a.b"), ("x/y/z.tar.gz", "z.tar.gz x/y/z.tar"), (".hidden", ".hidden "),
            ("a/", " a/"), ("plain", "plain plain"), ("/abs/dir.d/f", "f /abs/dir.d/f"), ("a.b/c.", "c. a.b/c"),
            ("ünï/cødé.txt", "cødé.txt ünï/cødé"), ("with space/x y.z", "x y.z with space/x y"), ("/", " /"),
        ]

        @Test func aScanReplacesBaseNameExtensionAndSlotInEveryResult() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-rpl-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            // Four rounds of every case: enough tasks that both systems run several at once.
            let inputs = (0..<4).flatMap { _ in Self.cases.map(\.input) }
            let path = folder.appendingPathComponent("inputs.txt").path
            try Data(inputs.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: path))
            let run = try await runSkynet(["scan", "--spawn", "1", "--capacity", "2", "--failing-every", "0",
                                           "--job", "e=echo {/} {.} {%}", "--inputs", path, "--results", "--quiet"])
            #expect(run.status == 0, "\(run.stderr.suffix(2000))")
            let lines = run.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
            #expect(lines.count == inputs.count, "\(run.stdout)")
            // Each line is the expected text, then the slot: 1 or 2 (the capacity) on either system.
            var slots: Set<String> = []
            var texts: [String] = []
            for line in lines {
                guard let space = line.lastIndex(of: " ") else { Issue.record("no slot in \(line.debugDescription)"); continue }
                texts.append(String(line[..<space]))
                slots.insert(String(line[line.index(after: space)...]))
            }
            #expect(texts.sorted() == (0..<4).flatMap { _ in Self.cases.map(\.expected) }.sorted())
            #expect(slots.isSubset(of: ["1", "2"]) && !slots.isEmpty, "\(slots)")
        }
    }
}
