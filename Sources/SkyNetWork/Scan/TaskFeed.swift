/// Tasks that arrive in batches, each of which may take a wait: lines of a file read on a
/// thread of its own. The coordinator asks for the next batch only when it has used the last.
package protocol TaskFeed: Sendable {
    /// The next tasks, in order; empty when there are no more.
    func nextBatch() async -> [ScanTask]
}
