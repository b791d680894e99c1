import SkyNetRuntime
import SkyNetWork

/// A node's side of the files that travel with tasks: its work root, made at the first file
/// request and removed when the node stops; the free space uploads reserve; and the uploads
/// under way, which count against the node's capacity like running tasks (an upload is a task
/// that has not started yet: `busy` must come before its first byte, not after the last).
package final class NodeFiles: Sendable {
    /// The node's name, for messages; where its root goes; how to read the free space.
    let node: String
    let parent: String?
    private let probe: @Sendable (DirectoryHandle) throws -> Int64
    /// The root once made; nil before the first file request and after `remove`.
    private let state: Locked<State>
    package let space: FreeSpace
    /// The names of the leftover roots `sweepLeftovers` removed, once it is done.
    let swept = AsyncSignal<[String]>()

    private struct State {
        var root: WorkRoot?
        /// Set by `remove`: no root is made again (the node is stopping).
        var removed = false
        /// Uploads holding a place of the capacity until their task runs (or they fail).
        var uploads = 0
    }

    package init(node: String, parent: String?, probe: @escaping @Sendable (DirectoryHandle) throws -> Int64) {
        self.node = node
        self.parent = parent
        self.probe = probe
        let state = Locked(State())
        self.state = state
        space = FreeSpace(node: node) {
            guard let root = state.withLock({ $0.root }) else { return 0 }
            return try probe(root.handle)
        }
    }

    /// The root, made (`mkdtemp`, lock) at the first call. Blocks on the file system: call it
    /// on a thread of our own (a connection's reader), never on the pool.
    func root() throws(FileError) -> WorkRoot {
        // Made under the lock: two connections' first files never make two roots.
        try state.withLock { (state) throws(FileError) -> WorkRoot in
            if let root = state.root { return root }
            guard !state.removed else { throw FileError(path: parent ?? WorkRoot.defaultParent(), code: ESHUTDOWN) }
            let root = try WorkRoot.make(in: parent)
            state.root = root
            return root
        }
    }

    /// Whether the root exists now (made and not removed).
    var hasRoot: Bool { state.withLock { $0.root != nil } }

    /// Takes a place for an upload when the tasks running (`running`) and the uploads under
    /// way leave one of `capacity`: checked and taken in one step. False: answer `busy`.
    func takeUploadPlace(running: Int, capacity: Int) -> Bool {
        state.withLock { state in
            guard running + state.uploads < capacity else { return false }
            state.uploads += 1
            return true
        }
    }

    /// An upload ended: its task runs now (holding a slot of the system) or it failed.
    func giveBackUploadPlace() {
        state.withLock { $0.uploads = max(0, $0.uploads - 1) }
    }

    /// Uploads under way, for tests and status.
    var uploads: Int { state.withLock { $0.uploads } }

    /// Removes the root and everything in it, and makes none again. Blocks on the file
    /// system (blocking: `Node.stop` calls it on the blocking pool).
    package func remove() {
        let root = state.withLock { state in
            defer {
                state.root = nil
                state.removed = true
            }
            return state.root
        }
        root?.remove()
    }

    /// Removes, on the blocking pool, the roots killed nodes left in the parent (their lock
    /// is free): a node that starts cleans up after one that could not.
    package func sweepLeftovers() {
        let parent = parent, swept = swept
        BlockingPool.shared.execute { swept.fulfil(WorkRoot.sweep(in: parent)) }
    }
}
