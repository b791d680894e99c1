/// The child's side of a life tied to its parent (`ChildProcess.Input.pipe`): a thread of
/// its own reads the descriptor until EOF, which comes when the parent (the only holder of
/// the write end) is gone, however it ended.
package enum ParentWatch {
    /// Starts watching `descriptor` (default: stdin). `gone` runs once, on the watch thread,
    /// at EOF; if the process is still alive `backstop` later, it exits at once (status 1),
    /// so a child whose orderly stop hangs still never outlives its parent for long.
    package static func start(descriptor: Int32 = 0, backstop: Duration = .seconds(2), gone: @escaping @Sendable () -> Void) {
        startThread(named: "skynet-parent-watch") {
            // A parent never writes; bytes that arrive anyway are ignored.
            readChunks(from: descriptor, chunkSize: 1) { _ in true }
            // The backstop is on the timer, armed before the orderly stop starts: no thread
            // sleeps for it, and it fires even if that stop hangs.
            DeadlineTimer.shared.schedule(after: backstop) {
                ChildProcess.killEveryGroup()
                _exit(1)
            }
            gone()
        }
    }
}
