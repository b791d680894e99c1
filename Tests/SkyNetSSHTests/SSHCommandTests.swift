@testable import SkyNetCluster
@testable import SkyNetSSH
@testable import SkyNetWork
import Testing

struct SSHCommandTests {
    @Test func wordsAreSplitAsShDoesWithTheHomeForALeadingTilde() throws {
        let command = try SSHCommand(#"ssh -i ~/.ssh/ci -o "ProxyJump=a b" 'x{}y' ~"#, home: "/home/al")
        #expect(command.words == ["ssh", "-i", "/home/al/.ssh/ci", "-o", "ProxyJump=a b", "x{}y", "/home/al"])
    }

    @Test func aQuotedOrInnerTildeStaysText() throws {
        #expect(try SSHCommand(#"ssh '~/k' a~b \~"#, home: "/h").words == ["ssh", "~/k", "a~b", "~"])
    }

    @Test(arguments: ["ssh ~bob/k", "ssh $HOME/k", "ssh `id`", "ssh *.key", "ssh a | b", "ssh 'a", ""])
    func shellSyntaxIsRefused(text: String) {
        #expect(throws: CommandTemplate.ParseError.self) { try SSHCommand(text, home: "/h") }
    }

    @Test func templatesStillTakePlaceholdersAndRefuseTilde() throws {
        #expect(throws: CommandTemplate.ParseError.self) { try CommandTemplate("cat ~/x") }
        #expect(try CommandTemplate("echo {}").arguments(input: "in", sector: 0) == ["echo", "in"])
    }

    @Test func batchModeComesFirstAndTheTunablesAfterTheUsersWords() throws {
        let command = try SSHCommand("ssh -F /dev/null -o BatchMode=no -t", home: "/h")
        let login = try SSHLogin(parsing: "4/alice@gpu1:2222")
        #expect(command.arguments(to: login, remote: "exec skynet node --stdio", connectTimeout: .milliseconds(4200)) == [
            "ssh", "-o", "BatchMode=yes", "-F", "/dev/null", "-o", "BatchMode=no", "-t",
            "-T", "-a", "-x", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=5",
            "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-o", "ClearAllForwardings=yes",
            "-p", "2222", "-l", "alice", "--", "gpu1", "exec skynet node --stdio",
        ])
        #expect(SSHCommand.standard.arguments(to: SSHLogin(host: "::1"), remote: "r", connectTimeout: .zero).suffix(3) == ["--", "::1", "r"])
    }

    @Test func theCheckHintIsWhatAPersonTypes() throws {
        #expect(SSHCommand.standard.checkHint(for: SSHLogin(host: "gpu1")) == "ssh gpu1 true")
        let command = try SSHCommand("ssh -i '/my keys/k'", home: "/h")
        #expect(command.checkHint(for: SSHLogin(slots: 2, user: "al", host: "gpu1", port: 2222)) == "ssh -i '/my keys/k' -p 2222 al@gpu1 true")
    }
}
