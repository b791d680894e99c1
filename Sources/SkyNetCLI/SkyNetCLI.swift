import Dispatch
import SkyNetCommands
import SkyNetRuntime

/// `skynet`: the command line of `SkyNetCommands`.
@main
enum SkyNetCLI {
    /// Synchronous, so that its first line runs before the concurrency runtime starts (an
    /// async `main` runs after Dispatch made its eventfd and epoll descriptors), then serves
    /// the command on a task while the main queue runs, as an async `main` would.
    static func main() {
        Commands.prepareProcess()
        let arguments = Array(CommandLine.arguments.dropFirst())
        Task { exit(await Commands.run(arguments)) }
        dispatchMain()
    }
}
