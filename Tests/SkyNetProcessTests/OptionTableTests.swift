@testable import SkyNet
@testable import SkyNetCommands
@testable import SkyNetCluster
@testable import SkyNetOptions
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// Each command's option table against what it prints and what it accepts.
struct OptionTableTests {
    /// Each command's help, usage line, and the options its table accepts and its help lists.
    static let commands = [
        ScanCommand.name: (ScanCommand.help, ScanCommand.usage, names(ScanCommand.optionTable)),
        NodeCommand.name: (NodeCommand.help, NodeCommand.usage, names(NodeCommand.optionTable)),
        StatusCommand.name: (StatusCommand.help, StatusCommand.usage, names(StatusCommand.optionTable)),
    ]

    @Test(arguments: ["scan", "node", "status"])
    func helpNamesEveryAcceptedOptionAndAcceptsEveryOptionItNames(command: String) throws {
        let (help, usage, names) = try #require(Self.commands[command])
        let hidden = names.accepted.subtracting(names.listed)
        #expect(hidden.isSubset(of: [String(NodeProcess.exitWithParentFlag.dropFirst(2))]), "\(command): hidden \(hidden)")
        for name in names.listed {
            #expect(help.contains("\n  --\(name) "), "\(command): help lists no --\(name)")
            #expect(usage.contains("--\(name) ") || usage.contains("--\(name)]"), "\(command): usage names no --\(name)")
        }
        let named = Set(Self.optionNames(in: help))
        #expect(named.subtracting(names.accepted).isEmpty, "\(command): help names \(named.subtracting(names.accepted)), which it does not accept")
    }

    @Test func theSpawnedNodesCommandLineParsesToTheScansSettings() throws {
        let scratch = try TokenScratch()
        let tokenFile = try scratch.tokenFile("0123456789abcdef0123")
        let scan = try ScanCommand(arguments: [
            "--spawn", "2", "--capacity", "0", "--local-capacity", "1", "--failing-every", "7",
            "--job", "sum=sha256sum {}", "--max-output", "64K", "--token-file", tokenFile,
        ])
        let spawned = ScanCommand.optionTable.spawnedArguments(for: scan)
        let commandLine = NodeProcess.commandLine(name: "node1", arguments: spawned)
        #expect(commandLine.first == NodeCommand.name)
        let node = try NodeCommand(arguments: Array(commandLine.dropFirst()))
        #expect(node.exitWithParent)
        #expect(node.options.capacity == 1)  // a scan's 0 still gives its nodes a slot
        #expect(node.options.failingEvery == 7)
        #expect(node.options.token == "0123456789abcdef0123")
        let job = node.options.jobs.job(named: "sum") as? CommandJob
        #expect(job?.command.text == "sha256sum {}")
        #expect(job?.maxOutput == 64 * 1024)

        let plain = try ScanCommand(arguments: ["--spawn", "1", "--failing-every", "0"])
        #expect(ScanCommand.optionTable.spawnedArguments(for: plain) == ["--capacity", "4", "--failing-every", "0"])
    }

    /// The node's help tells a drain as the node does it: it keeps accepting (a late client
    /// is told at once) until the drain ends, and says nothing of stopping to accept before.
    @Test func theNodesHelpSaysADrainingNodeKeepsAcceptingUntilItsDrainEnds() {
        let help = NodeCommand.help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(!help.contains("stops accepting"))
        #expect(help.contains("keeps accepting connections until the drain ends"))
        #expect(help.contains("a client that connects meanwhile is told at once"))
    }

    @Test func helpStatesTheRangesParsingEnforces() {
        #expect(ScanCommand.help.contains("--spawn N            start N local"))
        #expect(ScanCommand.help.contains("afterwards, 0...64 (default 0)\n"))
        #expect(NodeCommand.help.contains("1...512K (default 256K"))
        #expect(StatusCommand.help.contains("0.001...60 (default 2)"))
        #expect(throws: UsageError.self) { try ScanCommand.optionTable.parse(["--spawn", "65"]).int("spawn", default: 0) }
        #expect(throws: Never.self) { try ScanCommand.optionTable.parse(["--spawn", "64"]).int("spawn", default: 0) }
        #expect(throws: UsageError.self) { try NodeCommand.optionTable.parse(["--max-output", "513K"]).bytes("max-output", default: 1) }
        #expect(throws: Never.self) { try NodeCommand.optionTable.parse(["--max-output", "512K"]).bytes("max-output", default: 1) }
        #expect(throws: UsageError.self) { try StatusCommand.optionTable.parse(["--timeout", "61"]).double("timeout", default: 2) }
        #expect(throws: Never.self) { try StatusCommand.optionTable.parse(["--timeout", "60"]).double("timeout", default: 2) }
    }

    /// Every option a table accepts, and those its help lists.
    /// Each option's default is declared once, in its table entry: it is what a command that
    /// was not given the option reads (parsed as a given value is, so inside its range), and it
    /// is what help says; no help line writes a default of its own beside it.
    @Test func eachDefaultIsTheTablesAndHelpSaysIt() throws {
        func check<Command>(_ table: OptionTable<Command>, help: String) throws {
            let none = try table.parse([])
            for option in table.options {
                guard let fallback = option.fallback else { continue }
                switch option.value {
                case .count: #expect(try none.int(option.name) == Int(fallback), "--\(option.name)")
                case .bytes: #expect(try none.bytes(option.name) > 0 || fallback == "0", "--\(option.name)")
                case .seconds: #expect(try none.double(option.name) == Double(fallback), "--\(option.name)")
                case .text, .flag: #expect(none.stringOrDefault(option.name) == fallback, "--\(option.name)")
                }
                let lines = option.help.flatMap(\.lines).joined(separator: " ")
                #expect(!lines.contains("(default \(fallback)") && !lines.contains("default: \(fallback)"),
                        "--\(option.name) writes its default into its help instead of <default>")
                #expect(help.contains("(default \(fallback)"), "help does not say --\(option.name)'s default \(fallback)")
            }
        }
        try check(ScanCommand.optionTable, help: ScanCommand.help)
        try check(NodeCommand.optionTable, help: NodeCommand.help)
        try check(StatusCommand.optionTable, help: StatusCommand.help)
        #expect(try ScanCommand.optionTable.parse([]).int("total") == 20)
        #expect(try NodeCommand.optionTable.parse([]).bytes("max-file-size") == 1 << 30)
    }

    static func names<Command>(_ table: OptionTable<Command>) -> (accepted: Set<String>, listed: Set<String>) {
        (Set(table.options.map(\.name)), Set(table.options.filter { !$0.help.isEmpty }.map(\.name)))
    }

    /// Every `--word` in `text`.
    static func optionNames(in text: String) -> [String] {
        text.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "-") })
            .filter { $0.hasPrefix("--") && $0.count > 2 }.map { String($0.dropFirst(2)) }
    }
}
