import SkyNetRuntime
import SkyNetTransfer
import SkyNetWork

extension ScanJournal {
    /// The returned files' part of a resume: with `--return`, a completed entry
    /// counts as done only if, for each template's local path, its `files` holds that path and
    /// the file is still there with that size and SHA-256; otherwise its sector runs again.
    ///
    /// The journal is read on one thread while `FileCheckPool`'s two threads hash; the lines'
    /// effects are applied in journal order (a later entry of a sector, or a `printed` mark,
    /// must come after the earlier one's verdict), through a window of at most `window` lines
    /// held, so that a journal of a million entries never holds more than that many checks.
    /// Every call blocks: off the cooperative pool only (the resume runs on the blocking pool).
    final class ResumeFiles {
        /// The most lines held while their checks run.
        static let window = 16

        /// A line whose effect waits for the checks before it.
        private enum Held {
            case printed(ClosedRange<Int>)
            case entry(sector: Int, fingerprint: UInt32?, verdict: Verdict)
        }

        /// An entry's verdict: known at once, or the ticket of its check in the pool.
        private enum Verdict {
            case known(FileCheckPool.Verdict)
            case checking(ticket: Int)
        }

        private let spec: TransferSpec
        private let roots: ReturnRoots
        private let pool = FileCheckPool(workers: 2)
        private var held: [Held] = []
        /// The most lines ever held at once (never above `window`: tests check it).
        private(set) var mostHeld = 0

        /// Nil when there is nothing to check: no spec, or one without `--return` templates.
        /// `roots`: where relative and absolute paths start; nil: the working directory and `/`.
        init?(spec: TransferSpec?, roots: ReturnRoots?, journal path: String) throws(Failure) {
            guard let spec, !spec.returns.isEmpty else { return nil }
            self.spec = spec
            do {
                self.roots = try roots ?? ReturnRoots.current()
            } catch {
                throw Failure(description: "journal \(path): cannot open the working directory to check the returned files: \(error)")
            }
        }

        /// A `printed` mark, applied after the lines before it.
        func printed(_ range: ClosedRange<Int>, into point: inout ResumePoint) {
            hold(.printed(range), into: &point)
        }

        /// A completed entry in the scan's range: its files are checked unless `check` is false
        /// (the resume already failed for another reason: no need to hash anything).
        func completed(_ entry: Entry, fingerprint: UInt32?, check: Bool, into point: inout ResumePoint) {
            let verdict: Verdict
            switch check ? Self.targets(of: entry, spec: spec) : .check([]) {
            case .notDone(let reason): verdict = .known(.changed(reason))
            case .check(let targets) where targets.isEmpty: verdict = .known(.intact)
            case .check(let targets):
                let roots = self.roots
                verdict = .checking(ticket: pool.submit { ReturnedFileCheck.reason(targets, in: roots) })
            }
            hold(.entry(sector: entry.input, fingerprint: fingerprint, verdict: verdict), into: &point)
        }

        /// Applies every line still held, waiting for their checks.
        func finish(into point: inout ResumePoint) {
            drain(keeping: 0, into: &point)
        }

        /// Why `entry` (its latest completed entry) runs again now, checked on this thread; nil
        /// when its files are as recorded.
        func reason(for entry: Entry) -> String? {
            switch Self.targets(of: entry, spec: spec) {
            case .notDone(let reason): reason
            case .check(let targets): ReturnedFileCheck.reason(targets, in: roots)
            }
        }

        private func hold(_ line: Held, into point: inout ResumePoint) {
            held.append(line)
            mostHeld = max(mostHeld, held.count)
            drain(keeping: Self.window - 1, into: &point)
        }

        /// Applies the oldest lines until at most `keeping` are held: at once while the oldest's
        /// verdict is known, waiting for its check only when the window is full.
        private func drain(keeping: Int, into point: inout ResumePoint) {
            while let first = held.first {
                if case .entry(_, _, .checking) = first, held.count <= keeping { return }
                held.removeFirst()
                switch first {
                case .printed(let range): point.markPrinted(range)
                case .entry(let sector, let fingerprint, let verdict):
                    let found = switch verdict {
                    case .known(let known): known
                    case .checking(let ticket): pool.verdict(ticket)
                    }
                    switch found {
                    case .intact: point.add(sector, fingerprint: fingerprint)
                    case .changed(let reason): point.runAgain(sector, because: reason)
                    }
                }
            }
        }

        /// What deciding on an entry takes.
        enum Targets {
            /// Each current template's local path, with what the entry recorded of it.
            case check([(target: TransferPath, recorded: ReturnedFile)])
            /// Why the entry cannot count as done without looking at a file.
            case notDone(String)
        }

        /// What deciding on `entry` takes under `spec`: the files to check, or why it is not
        /// done (a path its `files` do not hold, a path that cannot travel).
        static func targets(of entry: Entry, spec: TransferSpec) -> Targets {
            // The paths as the scan that ran it made them: from its sector and input text.
            let task = ScanTask(input: entry.input, duration: 0, job: entry.jobName, text: entry.text)
            let plan: TransferPlan
            do { plan = try spec.plan(for: task) } catch { return .notDone(error.description) }
            var targets: [(target: TransferPath, recorded: ReturnedFile)] = []
            for (_, local) in plan.returns {
                // By bytes: Swift's == takes `café` in NFC for the NFD one, another file.
                guard let recorded = entry.files.first(where: { $0.path.utf8.elementsEqual(local.text.utf8) }) else {
                    return .notDone("\(local) is not in the journal")
                }
                targets.append((local, recorded))
            }
            return .check(targets)
        }
    }
}
