import Testing
@testable import SkyNet
@testable import SkyNetWork

@Suite struct CommandTemplateTests {
    func words(_ command: String, input: String = "IN", sector: Int = 7) throws -> [String] {
        try CommandTemplate(command).arguments(input: input, sector: sector)
    }

    @Test func splitsOnWhitespaceLikeAShell() throws {
        #expect(try words("sha256sum   -b\t{}") == ["sha256sum", "-b", "IN"])
    }

    @Test func appendsTheInputWhenThereIsNoPlaceholder() throws {
        #expect(try words("wc -c") == ["wc", "-c", "IN"])
    }

    @Test func replacesPlaceholdersInsideWordsAndQuotes() throws {
        #expect(try words("convert {} 'out/{#}.png' \"s-{#}-{}\"") == ["convert", "IN", "out/7.png", "s-7-IN"])
        // A sector placeholder alone still counts: the input is not appended.
        #expect(try words("echo {#}") == ["echo", "7"])
    }

    @Test func quotesKeepWhatTheShellKeeps() throws {
        #expect(try words(#"printf '%s|%s' "a \"b\" \$c \x" it\ s"#) == ["printf", "%s|%s", #"a "b" $c \x"#, "it s", "IN"])
        #expect(try words("echo '' \"\"") == ["echo", "", "", "IN"])
        #expect(try words(#"echo \{} x{y}"#) == ["echo", "{}", "x{y}", "IN"])
    }

    @Test func theInputIsNeverInterpreted() throws {
        let input = #"$(rm -rf /); `x` *.txt "q" 'q' \ -n é"#
        #expect(try words("echo {}", input: input) == ["echo", input])
    }

    @Test(arguments: ["cat a | wc", "ls > out", "a; b", "a && b", "echo $HOME", "echo \"$HOME\"", "echo `id`", "sleep 1 &", "echo x # y", "(a)", "ls *.jpg", "cat ~/x", "ls a?", "ls [ab]"])
    func refusesWhatOnlyAShellWouldDo(_ command: String) {
        #expect(throws: CommandTemplate.ParseError.self) { try CommandTemplate(command) }
    }

    @Test func namesWhatIsWrong() {
        #expect(throws: CommandTemplate.ParseError(description: "a single quote (') is never closed")) { try CommandTemplate("echo 'x") }
        #expect(throws: CommandTemplate.ParseError(description: "a double quote (\") is never closed")) { try CommandTemplate("echo \"x") }
        #expect(throws: CommandTemplate.ParseError(description: "the command ends in a lone backslash")) { try CommandTemplate("echo x\\") }
        #expect(throws: CommandTemplate.ParseError.self) { try CommandTemplate("   ") }
        #expect(throws: CommandTemplate.ParseError.self) { try CommandTemplate("{} --help") }
    }

    @Test func knowsItsProgram() throws {
        #expect(try CommandTemplate("'/usr/bin/my tool' {}").program == "/usr/bin/my tool")
    }

    @Test func commandsWithTheSameWordsRunAlikeHoweverQuoted() throws {
        let plain = try CommandTemplate("echo {}")
        #expect(plain.runsLike(try CommandTemplate("'echo'  {}")))
        #expect(plain.runsLike(try CommandTemplate(#"echo "{}""#)))
        #expect(plain.runsLike(try CommandTemplate("echo")))  // the input goes last without {}
        #expect(!plain.runsLike(try CommandTemplate("echo {} {}")))
        #expect(!plain.runsLike(try CommandTemplate("echo x {}")))
        #expect(!plain.runsLike(try CommandTemplate("echo {#}")))
        #expect(!plain.runsLike(try CommandTemplate(#"echo \{}"#)))  // a literal {}
    }
}
