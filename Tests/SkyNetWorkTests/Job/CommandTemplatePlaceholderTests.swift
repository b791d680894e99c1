import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// GNU parallel's replacement strings in a job's command: `{.}`, `{/}`, `{//}`, `{/.}` and `{%}`
/// beside `{}` and `{#}`, with GNU parallel's meaning for every input.
@Suite struct CommandTemplatePlaceholderTests {
    /// The placeholders that take the input apart, in the order of `expected` below.
    static let parts: [CommandTemplate.Placeholder] = [.input, .withoutExtension, .baseName, .directory, .baseNameWithoutExtension]

    /// What GNU parallel 20221122 printed for `{} {.} {/} {//} {/.}` of each input.
    static let expected: [(String, [String])] = [
        ("photos/a.b.jpg", ["photos/a.b.jpg", "photos/a.b", "a.b.jpg", "photos", "a.b"]),
        ("a", ["a", "a", "a", ".", "a"]),
        ("/a/b", ["/a/b", "/a/b", "b", "/a", "b"]),
        ("./a", ["./a", "./a", "a", ".", "a"]),
        ("a/", ["a/", "a/", "", ".", ""]),
        (".hidden", [".hidden", "", ".hidden", ".", ""]),
        ("a.b.c", ["a.b.c", "a.b", "a.b.c", ".", "a.b"]),
        ("/", ["/", "/", "", "/", ""]),
        ("", ["", "", "", ".", ""]),
        (".", [".", "", ".", ".", ""]),
        ("..", ["..", ".", "..", ".", "."]),
        ("a/..", ["a/..", "a/.", "..", "a", "."]),
        ("a.b/c", ["a.b/c", "a.b/c", "c", "a.b", "c"]),
        ("a.", ["a.", "a", "a.", ".", "a"]),
        ("//", ["//", "//", "", "/", ""]),
        ("a/b//", ["a/b//", "a/b//", "", "a", ""]),
        ("//a//b//", ["//a//b//", "//a//b//", "", "//a", ""]),
        ("a b/c d.e f", ["a b/c d.e f", "a b/c d", "c d.e f", "a b", "c d"]),
        ("x\ny/z", ["x\ny/z", "x\ny/z", "x\nz", "x\ny", "x\nz"]),
        ("p/q\nr/s", ["p/q\nr/s", "p/q\nr/s", "q\nr/s", "p/q\nr", "q\nr/s"]),
        ("a.b\nc", ["a.b\nc", "a", "a.b\nc", ".", "a"]),
    ]

    func words(_ command: String, input: String = "photos/a.b.jpg", sector: Int = 7, slot: Int = 3) throws -> [String] {
        try CommandTemplate(command).arguments(input: input, sector: sector, slot: slot)
    }

    @Test(arguments: expected)
    func eachPlaceholderTakesTheInputApartAsGNUParallelDoes(input: String, values: [String]) {
        #expect(Self.parts.map { $0.value(input: input, sector: 0, slot: 1) } == values)
    }

    @Test func theTableOfTheReadmeHoldsForPhotosABJpg() throws {
        #expect(try words("echo {} {.} {/} {//} {/.} {#} {%}")
                == ["echo", "photos/a.b.jpg", "photos/a.b", "a.b.jpg", "photos", "a.b", "7", "3"])
    }

    @Test func placeholdersWorkInsideWordsAndQuotes() throws {
        #expect(try words("convert {} {.}.png") == ["convert", "photos/a.b.jpg", "photos/a.b.png"])
        #expect(try words("cp {} '{//}/small-{/.}-{%}.jpg' \"{#}{/}\"")
                == ["cp", "photos/a.b.jpg", "photos/small-a.b-3.jpg", "7a.b.jpg"])
        #expect(try words("echo x{{.}}y{//}{/}") == ["echo", "x{photos/a.b}yphotosa.b.jpg"])
    }

    /// Any placeholder places the input itself, so it is not appended as well.
    @Test(arguments: ["{.}", "{/}", "{//}", "{/.}", "{%}", "{#}"])
    func anyPlaceholderKeepsTheInputFromBeingAppended(_ placeholder: String) throws {
        #expect(try words("echo \(placeholder)").count == 2)
    }

    @Test func escapedPlaceholdersAreLiteral() throws {
        #expect(try words(#"echo \{.} \{/} \{//} \{/.} \{%} \{#} \{}"#)
                == ["echo", "{.}", "{/}", "{//}", "{/.}", "{%}", "{#}", "{}", "photos/a.b.jpg"])
        // A quote inside one breaks it as a backslash does: `'{'.}` is the text `{.}`.
        #expect(try words("echo '{'.} {\"/\"}") == ["echo", "{.}", "{/}", "photos/a.b.jpg"])
    }

    /// Forms GNU parallel has only with options (`{1}`, `{..}` of `--plus`) or not at all stay
    /// text, as `{x}` always did; so does a placeholder cut off at the command's end.
    @Test func otherBraceFormsAreText() throws {
        let forms = ["{x}", "{1}", "{..}", "{//.}", "{/x}", "{%%}", "{#.}", "}{", "{./}", "{/"]
        #expect(try words("echo " + forms.joined(separator: " ")) == ["echo"] + forms + ["photos/a.b.jpg"])
    }

    @Test func theSlotDefaultsToOneForCallersThatHaveNone() throws {
        #expect(try CommandTemplate("echo {%}").arguments(input: "in", sector: 0) == ["echo", "1"])
        #expect(JobRequest(sector: 0, input: "in").slot == 1)
        #expect(JobRequest(sector: 4, input: "in", duration: 2).inSlot(5) == JobRequest(sector: 4, input: "in", duration: 2, slot: 5))
    }

    @Test func commandsWithDifferentPlaceholdersDoNotRunAlike() throws {
        let input = try CommandTemplate("echo {}")
        for other in ["echo {.}", "echo {/}", "echo {//}", "echo {/.}", "echo {%}", "echo {#}"] {
            #expect(!input.runsLike(try CommandTemplate(other)), "\(other)")
        }
        #expect(try CommandTemplate("echo {/.}").runsLike(try CommandTemplate("'echo' \"{/.}\"")))
    }
}

/// Our placeholders beside the real GNU parallel's, input by input.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct GNUParallelPlaceholderTests {
    /// Inputs with no dot, leading and trailing dots, trailing and doubled slashes, the root,
    /// nothing at all, newlines (which make Perl's `.` stop), spaces, shell syntax and UTF-8
    /// whose combining mark follows a `/` (one Swift character, but two for Perl).
    static let trickyInputs: [String] = CommandTemplatePlaceholderTests.expected.map(\.0) + [
        "a/b", "a/b/", "a//b", "/a", "a.tar.gz", "./.x", "...", "a..b", ".a.b", "x/.a.b", "a/.hidden", "a/.", "a.b/", "a/b.c/",
        "./", "../", "/.", "/..", "///", "a/./b", "a.b.c/d", "/a.b/", "é/ü.ñ", "日本/語.txt", "ü.", "a/\u{301}b.c", "\u{301}.x",
        "\n", "a/b\n", "a.b\n", "x/y\nz", "/\n/", "a.\n/b", "\n/a.b", "a\n\nb/c.d", "\t.\t", "-n", "--help", "-", "--", "%s.%d",
        "'q'.x", "\"d\"/e.f", "$(id).y", "`id`/z", "a\\b/c\\.d", "{}.{.}", "{/}/{//}", "*.jpg", "~/a.b", "a b/ c.d /e",
    ]

    @Test(.enabled("needs GNU parallel first on PATH, not moreutils' parallel (apt-get install parallel)") {
        await GNUParallel.lookUpOnPath().path != nil
    })
    func everyPlaceholderGivesWhatGNUParallelGivesForEveryTrickyInput() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-rpl-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data(Self.trickyInputs.map { $0 + "\0" }.joined().utf8).write(to: URL(fileURLWithPath: file))
        // One job per NUL-separated input, in input order; parallel quotes each value for its
        // shell, and printf writes each back NUL-terminated, newlines and all.
        let parts = CommandTemplatePlaceholderTests.parts
        let output = try await toolOutput("parallel", ["--will-cite", "-0", "-k", "-a", file, "printf", "'%s\\0'"] + parts.map(\.rawValue))
        // Split as bytes: a NUL before a combining mark is one Swift character with it.
        var theirs = Array(output.utf8).split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        #expect(theirs.popLast() == "")
        try #require(theirs.count == Self.trickyInputs.count * parts.count, "parallel printed: \(output.debugDescription)")
        for (index, input) in Self.trickyInputs.enumerated() {
            let fromParallel = Array(theirs[(index * parts.count)..<((index + 1) * parts.count)])
            #expect(fromParallel.first == input, "parallel did not get \(input.debugDescription) as it is")
            let ours = parts.map { $0.value(input: input, sector: 0, slot: 1) }
            #expect(ours == fromParallel, "\(input.debugDescription): \(parts.map(\.rawValue))")
            // And through a command, as a job runs it.
            let words = try CommandTemplate("printf " + parts.map(\.rawValue).joined(separator: " ")).arguments(input: input, sector: 0)
            #expect(Array(words.dropFirst()) == fromParallel)
        }
    }
}
