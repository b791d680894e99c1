import SkyNetActors
import SkyNetRuntime
import SkyNetWork

/// What a program declares that its nodes run: its jobs, and the distributed actor types they
/// make when asked (nil: `skynet`'s own nodes, which host no actors).
package struct ProgramDeclarations: Sendable {
    package var jobs = JobRegistry()
    package var actors: ActorRegistry?

    package init(jobs: JobRegistry = JobRegistry(), actors: ActorRegistry? = nil) {
        self.jobs = jobs
        self.actors = actors
    }
}

/// A program built on SkyNet is its own node: started as `PROGRAM node --port N` or
/// `PROGRAM node --stdio` (by an operator, by `ActorCluster`'s `--spawn`, or over ssh) it
/// serves exactly as `skynet node` does, with the program's jobs and actor types. Every node of
/// the program then holds the same types as the program that links to them, by construction.
public enum ClusterProgram {
    /// Serves as a node when this process was started as one (`PROGRAM node …`, options as
    /// `skynet node` takes them) and ends the process when the node stops; returns at once
    /// otherwise. Call it first in `main`, before the program does anything else.
    ///
    /// `PROGRAM --version` alone prints the program's name and SkyNet's version and exits:
    /// `--ship` runs it on a host to check that the copy it shipped starts there.
    public static func serveIfNode(actors: ActorRegistry, jobs: JobRegistry = JobRegistry(),
                                   arguments: [String] = CommandLine.arguments) async {
        let rest = Array(arguments.dropFirst())
        if rest == ["--version"] {
            print("\(URL(fileURLWithPath: arguments.first ?? "program").lastPathComponent) (SkyNet \(Commands.version))")
            exit(0)
        }
        guard let first = rest.first, first == NodeCommand.name || first == GroupKeeper.command else { return }
        Commands.prepareProcess()
        exit(await Commands.run(rest, program: ProgramDeclarations(jobs: jobs, actors: actors)))
    }
}
