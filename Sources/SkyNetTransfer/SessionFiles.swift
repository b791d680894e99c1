import SkyNetRuntime
import SkyNetWork

/// One connection's files on a node: its `conn-<N>/` (made at its first file request), the
/// basefiles it stored, and how many of its uploads and tasks are alive. When the connection
/// has ended and its last task too, the directory goes (on the blocking pool): a node keeps
/// nothing of a scan once its connection is gone, whether `--cleanup` was asked for or not.
package final class SessionFiles: Sendable {
    let files: NodeFiles
    private let state = Locked(State())
    /// Fulfilled once the connection's directory is gone (never, if it was never made).
    let removed = AsyncSignal<Void>()

    private struct State {
        var directory: ConnectionDirectory?
        var basefiles: [WorkPath] = []
        /// Uploads and tasks begun and not ended.
        var live = 0
        var ended = false
    }

    package init(files: NodeFiles) {
        self.files = files
    }

    /// The connection's directory, made at the first call (the node's root too). Blocks on
    /// the file system: the reader thread calls it.
    package func directory() throws(ScanFailure) -> ConnectionDirectory {
        try state.withLock { (state) throws(ScanFailure) -> ConnectionDirectory in
            if let directory = state.directory { return directory }
            guard !state.ended else { throw ScanFailure(code: .cancelled, message: "the connection ended") }
            do throws(FileError) {
                let directory = try files.root().openConnection()
                state.directory = directory
                return directory
            } catch {
                throw ScanFailure(code: error.code == ENOSPC ? .noSpace : .taskFailed,
                                  message: "cannot make a work directory on \(files.node): \(error)")
            }
        }
    }

    /// The basefiles stored so far, in the order they came.
    package var basefiles: [WorkPath] { state.withLock { $0.basefiles } }

    /// Whether `path` is the path of a stored basefile (or names the same file).
    func isBasefile(_ path: WorkPath) -> Bool {
        state.withLock { $0.basefiles.contains { $0.namesSameFile(as: path) } }
    }

    /// Records a basefile that arrived whole: every later task gets it.
    func addBasefile(_ path: WorkPath) {
        state.withLock { $0.basefiles.append(path) }
    }

    /// An upload or task of this connection begins; false once the connection ended (its
    /// directory is going: nothing new may start there).
    package func begin() -> Bool {
        state.withLock { state in
            guard !state.ended else { return false }
            state.live += 1
            return true
        }
    }

    /// An upload or task begun with `begin` ended; the last one after the connection's end
    /// removes the directory.
    package func end() {
        let directory: ConnectionDirectory? = state.withLock { state in
            state.live = max(0, state.live - 1)
            return state.ended && state.live == 0 ? state.directory.take() : nil
        }
        if let directory { remove(directory) }
    }

    /// The connection ended: its directory goes now, or after its last task.
    package func connectionEnded() {
        let directory: ConnectionDirectory? = state.withLock { state in
            state.ended = true
            return state.live == 0 ? state.directory.take() : nil
        }
        if let directory { remove(directory) }
    }

    private func remove(_ directory: ConnectionDirectory) {
        let removed = removed
        BlockingPool.shared.execute {
            directory.remove()
            removed.fulfil(())
        }
    }
}
