import SkyNetRuntime

extension GroupKeeper {
    /// Starts the keeper from this very executable, before the first job is spawned. One that
    /// cannot start is reported, and the command goes on without it: its jobs are still
    /// stopped on every orderly path, only a SIGKILL would leave them running.
    static func startFromThisExecutable() async {
        let executable = runningExecutablePath()
        do {
            try await onBlockingPool { try GroupKeeper.start(executable: executable) }
        } catch {
            await Console.printError("warning: cannot start the helper that kills this process's jobs if it is killed (\(error)): a SIGKILL would leave them running")
        }
    }
}
