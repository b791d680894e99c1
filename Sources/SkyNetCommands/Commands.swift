import SkyNetOptions
import SkyNetRuntime

/// One `skynet` subcommand: parses and validates its arguments, then runs.
protocol Command {
    static var name: String { get }
    static var summary: String { get }
    static var usage: String { get }
    static var help: String { get }
    /// The usage line a usage error of `arguments` shows: `usage`, or a form of the command
    /// that those arguments chose (`skynet node --stdio`).
    static func usage(for arguments: [String]) -> String
    /// Parses and validates; a `UsageError` names the option that is wrong.
    init(arguments: [String]) throws(UsageError)
    /// Runs and returns the exit status.
    func run() async -> Int32
}

extension Command {
    static func usage(for arguments: [String]) -> String { usage }
}

/// The `skynet` command line: its commands, help and version. The `skynet` executable runs it;
/// a program built on the library runs its `node` command (`ClusterProgram`).
package enum Commands {
    static let version = "0.1.0"
    static var commands: [any Command.Type] { [ScanCommand.self, NodeCommand.self, StatusCommand.self] }

    static let help = """
        skynet \(version): spread scan tasks over a cluster of processes.

        usage: skynet <command> [options]

        commands:
        \(commands.map { "  \($0.name.padded(to: 8))\($0.summary)" }.joined(separator: "\n"))

        Run 'skynet help <command>' or 'skynet <command> --help' for a command's options.

        examples:
          skynet scan --total 20 --spawn 2        a scan over this process and 2 local nodes
          skynet node --port 9001 --name alpha    run a node for a cluster.json peer
          skynet status                           which peers of ./cluster.json are up
          skynet scan --total 100 --json | jq .   events as JSON Lines
        """

    /// What a process of ours does first, before it opens a descriptor or starts a thread: a
    /// bounded number of malloc arenas, descriptors 0, 1 and 2 open (on /dev/null when they
    /// were closed, so that no socket takes their numbers), and every descriptor it may have.
    package static func prepareProcess() {
        MallocArenas.limit()
        StandardDescriptors.openClosedOnes()
        DescriptorLimit.raiseToMaximum()
    }

    /// Runs `skynet ARGUMENTS…` (the arguments after the program's name); returns the exit status.
    /// `program`: what a node it starts runs (by default `skynet`'s: the built-in scan, no actors).
    package static func run(_ arguments: [String], program: ProgramDeclarations = ProgramDeclarations()) async -> Int32 {
        guard let first = arguments.first else {
            Console.err("error: no command given\n\(help)")
            return 2
        }
        switch first {
        case "--help", "-h":
            Console.out(help)
            return 0
        case GroupKeeper.command:
            // Hidden: the helper that outlives a killed scan or node just long enough to kill its jobs.
            guard arguments.count == 2, let owner = pid_t(arguments[1]), owner > 1 else {
                Console.err("error: usage: skynet \(GroupKeeper.command) OWNER-PID (started by skynet itself, with the list on descriptor 3)")
                return 2
            }
            return (try? await onOwnThread(named: "skynet-keeper") { GroupKeeper.run(owner: owner) }) ?? 1
        case "--version":
            Console.out("skynet \(version)")
            return 0
        case "help":
            guard arguments.count > 1 else { Console.out(help); return 0 }
            guard let command = command(named: arguments[1]) else { return unknownCommand(arguments[1]) }
            Console.out(command.help)
            return 0
        default:
            guard let command = command(named: first) else { return unknownCommand(first) }
            let rest = Array(arguments.dropFirst())
            if rest.contains("--help") || rest.contains("-h") {
                Console.out(command.help)
                return 0
            }
            do {
                let chosen = command == NodeCommand.self ? try NodeCommand(arguments: rest, program: program) : try command.init(arguments: rest)
                return await chosen.run()
            } catch {
                Console.err("error: \("\(error)".escapingControlCharacters)\n\(command.usage(for: rest))\nRun 'skynet help \(command.name)' for more.")
                return 2
            }
        }
    }

    private static func command(named name: String) -> (any Command.Type)? {
        commands.first { $0.name == name }
    }

    private static func unknownCommand(_ name: String) -> Int32 {
        let names = commands.map { $0.name }
        let suggestion = closest(to: name, among: Set(names)).map { " Did you mean '\($0)'?" } ?? ""
        Console.err("error: unknown command '\(name.escapingControlCharacters)'.\(suggestion)\nThe commands are \(names.joined(separator: ", ")); run 'skynet --help' for usage.")
        return 2
    }
}

