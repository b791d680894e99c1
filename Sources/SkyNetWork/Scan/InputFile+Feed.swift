import SkyNetRuntime

extension InputFile {
    /// The tasks of this file's lines, read lazily a batch ahead on a thread of their own.
    ///
    /// - Parameter makeTask: the task of a sector and its input text; nil skips the sector
    ///   (a resumed one).
    package func feed(_ makeTask: @escaping @Sendable (_ sector: Int, _ text: String) -> ScanTask?) -> InputFeed {
        InputFeed(file: self, makeTask: makeTask)
    }
}

/// The tasks of an inputs file, read a bounded batch at a time on a thread of their own, one
/// batch read ahead: memory holds at most two batches, however long the file.
///
/// The file was checked when it was opened; if it changed since (shorter, or a line that no
/// longer reads), the feed ends early and `failure` says why.
package final class InputFeed: TaskFeed {
    /// The most tasks in one batch, and the most input bytes (a batch holds at least one).
    static let batchTasks = 1024
    static let batchBytes = 4 * 1024 * 1024

    private enum State {
        case idle(LineCursor)
        case reading
        case ended
    }

    private let file: InputFile
    private let makeTask: @Sendable (Int, String) -> ScanTask?
    /// The cursor, taken out while a batch is read (one read at a time: the coordinator asks
    /// for one batch after another).
    private let state: Locked<State>
    private let prefetch = Locked<Task<[ScanTask], Never>?>(nil)
    private let failed = Locked<InputFailure?>(nil)

    init(file: InputFile, makeTask: @escaping @Sendable (Int, String) -> ScanTask?) {
        self.file = file
        self.makeTask = makeTask
        state = Locked(.idle(LineCursor(descriptor: file.descriptor, name: file.name)))
    }

    /// Why the feed ended before the file's last counted line, if it did.
    package var failure: InputFailure? { failed.withLock { $0 } }

    package func nextBatch() async -> [ScanTask] {
        let pending = prefetch.withLock { task in
            defer { task = nil }
            return task
        } ?? startRead()
        let batch = await pending.value
        if !batch.isEmpty {
            let next = startRead()
            prefetch.withLock { $0 = next }
        }
        return batch
    }

    private func startRead() -> Task<[ScanTask], Never> {
        Task { [self] in (try? await onOwnThread(named: "inputs-read") { self.readBatch() }) ?? [] }
    }

    /// Reads lines until a batch is full or the inputs end. Blocking: on its own thread (a batch
    /// of a long file takes its time; the blocking pool is for short calls).
    private func readBatch() -> [ScanTask] {
        let taken: LineCursor? = state.withLock { state in
            guard case .idle(let cursor) = state else { return nil }
            state = .reading
            return cursor
        }
        guard var cursor = taken else { return [] }
        var batch: [ScanTask] = []
        var bytes = 0
        var ended = false
        do {
            while batch.count < Self.batchTasks, bytes < Self.batchBytes {
                guard cursor.lineIndex < file.count else { ended = true; break }
                guard let text = try cursor.nextLine() else {
                    failed.withLock { $0 = $0 ?? InputFailure("inputs \(file.name) changed while the scan read it: it now ends at line \(cursor.lineIndex), it had \(file.count) inputs") }
                    ended = true
                    break
                }
                if let task = makeTask(cursor.lineIndex - 1, text) {
                    batch.append(task)
                    bytes += text.utf8.count
                }
            }
        } catch {
            failed.withLock { $0 = $0 ?? InputFailure("\(error.description) (the file changed while the scan read it)") }
            ended = true
        }
        state.withLock { $0 = ended ? .ended : .idle(cursor) }
        return batch
    }
}
