import SkyNetRuntime
import SkyNetTransfer
import SkyNetWork

extension ScanJournal {
    /// What a resumed scan takes from its journal: the sectors that completed and, with an
    /// inputs file, a fingerprint of the input each ran with (four bytes a sector).
    package struct ResumePoint: Sendable {
        /// The completed sectors in `0..<total`.
        package private(set) var sectors: SectorSet
        /// Lines that could not be read as entries.
        package internal(set) var skipped = 0
        private var fingerprints: [UInt32]
        /// Sectors whose result a `printed` mark after their last completed entry says reached
        /// stdout.
        private var printed: SectorSet
        /// Sectors whose last completed entry's returned files changed or are gone: they run
        /// again, as if never journaled (`ScanJournal+ResumeFiles`).
        private var rerun: SectorSet
        /// Why the first sector of `rerun` found in the journal runs again; nil when none is
        /// known (`readResumePoint` then finds one).
        var rerunReason: (sector: Int, reason: String)?

        init(total: Int, fingerprints: Bool) {
            sectors = SectorSet(total: total)
            printed = SectorSet(total: total)
            rerun = SectorSet(total: total)
            self.fingerprints = fingerprints ? Array(repeating: 0, count: max(0, total)) : []
        }

        /// How many sectors run again because their returned files changed or are gone.
        package var filesRerun: Int { rerun.count }

        /// What a resume says once on stderr when sectors run again for their returned files;
        /// nil when none does: `resume: 2 sectors run again, their returned files changed or
        /// are gone (first: photos/a.png is missing)`.
        package var filesMessage: String? {
            let count = rerun.count
            guard count > 0 else { return nil }
            let first = rerunReason.map { " (first: \($0.reason))" } ?? ""
            return count == 1
                ? "resume: 1 sector runs again, its returned files changed or are gone\(first)"
                : "resume: \(count) sectors run again, their returned files changed or are gone\(first)"
        }

        /// The sectors that run again for their returned files (for finding a reason).
        var rerunSectors: SectorSet { rerun }

        /// How many sectors completed.
        package var count: Int { sectors.count }

        /// The fingerprint of the input `sector` completed with; nil when it did not complete.
        package func fingerprint(of sector: Int) -> UInt32? {
            sectors.contains(sector) && sector < fingerprints.count ? fingerprints[sector] : nil
        }

        /// The completed sectors whose result no `printed` mark follows (`ScanJournal+Printed`).
        package var unprinted: SectorSet { sectors.subtracting(printed) }

        mutating func add(_ entry: Entry) {
            add(entry.input, fingerprint: fingerprints.isEmpty ? nil : inputFingerprint(entry.inputText))
        }

        /// A completed entry of `sector` whose input had `fingerprint` (nil without an inputs
        /// file): the sector is done, whatever an earlier entry of it said.
        mutating func add(_ sector: Int, fingerprint: UInt32?) {
            sectors.insert(sector)
            printed.remove(sector)  // a mark counts only for the entry before it
            if rerun.remove(sector), rerunReason?.sector == sector { rerunReason = nil }
            if let fingerprint, sectors.contains(sector), sector < fingerprints.count {
                fingerprints[sector] = fingerprint
            }
        }

        /// A completed entry of `sector` whose returned files changed or are gone: the sector
        /// runs again, its result neither skipped nor printed, as if it had never been journaled.
        mutating func runAgain(_ sector: Int, because reason: String) {
            rerun.insert(sector)
            sectors.remove(sector)
            printed.remove(sector)
            if rerunReason == nil { rerunReason = (sector, reason) }
        }

        mutating func markPrinted(_ range: ClosedRange<Int>) {
            guard range.upperBound >= 0, range.lowerBound < printed.total else { return }
            for sector in max(0, range.lowerBound)...min(range.upperBound, printed.total - 1) { printed.insert(sector) }
        }
    }

    /// Reads what a resume needs from the journal at `path`, as a stream, on a thread of its
    /// own.
    ///
    /// - Parameters:
    ///   - inputsFile: whether the scan's inputs come from a file. Then each sector's input is
    ///     fingerprinted, for `InputFile.verify`. Without one, a sector's input is its number,
    ///     and a journaled sector that ran with another text is a `Failure` at once.
    ///   - job: the job this scan runs. A completed sector that ran another job is a
    ///     `Failure`: its result is not this job's. (Only the name is compared: the same name
    ///     with another command is not detected.)
    ///   - returns: the scan's files. With `--return` templates, a completed sector
    ///     counts as done only if its returned files are still there as journaled
    ///     (`ScanJournal.ResumeFiles`); the others run again (`filesRerun`, `filesMessage`).
    ///   - roots: where the returned files' relative and absolute paths start; nil: the
    ///     process's working directory and `/` (a resume runs where the scan ran).
    package static func readResumePoint(
        path: String, total: Int, inputsFile: Bool, job: String = JobRegistry.scan, returns: TransferSpec? = nil,
        roots: ReturnRoots? = nil
    ) async throws -> ResumePoint {
        try await onBlockingPool { () throws -> ResumePoint in
            var point = ResumePoint(total: total, fingerprints: inputsFile)
            let files = try ResumeFiles(spec: returns, roots: roots, journal: path)
            var mismatch: Entry?
            var otherJob: Entry?
            point.skipped = try forEachLine(path: path) { line, _ in
                guard case .entry(let entry) = line else {
                    guard case .printed(let range) = line else { return }
                    if let files { files.printed(range, into: &point) } else { point.markPrinted(range) }
                    return
                }
                // A sector outside this scan's range is of no concern to it (adding it does nothing).
                guard entry.completed, entry.input >= 0, entry.input < total else { return }
                if entry.jobName != job, otherJob == nil { otherJob = entry }
                if !inputsFile, let text = entry.text, text != String(entry.input), mismatch == nil { mismatch = entry }
                guard let files else {
                    point.add(entry)
                    return
                }
                let fingerprint = inputsFile ? inputFingerprint(entry.inputText) : nil
                // Once the resume is bound to fail, no file is worth hashing.
                files.completed(entry, fingerprint: fingerprint, check: mismatch == nil && otherJob == nil, into: &point)
            }
            files?.finish(into: &point)
            if let mismatch {
                throw Failure(description: "journal \(path): sector \(mismatch.input) ran with the input \(String((mismatch.text ?? "").prefix(60)).debugDescription) from an inputs file, but this scan has none: resume with --inputs and the file it was written with, or start a new journal")
            }
            if let otherJob {
                throw Failure(description: "journal \(path): sector \(otherJob.input) ran the job '\(otherJob.jobName)', but this scan runs the job '\(job)': resume with --job \(otherJob.jobName), or start a new journal")
            }
            if let files, point.filesRerun > 0, point.rerunReason == nil { try findRerunReason(&point, files: files, path: path) }
            return point
        }
    }

    /// Names why a sector runs again when the first one found to do so was later journaled as
    /// done (its reason went with it): the lowest sector that runs again, its last completed
    /// entry read once more and checked on this thread.
    private static func findRerunReason(_ point: inout ResumePoint, files: ResumeFiles, path: String) throws(Failure) {
        let rerun = point.rerunSectors
        guard let sector = (0..<rerun.total).first(where: { rerun.contains($0) }) else { return }
        var last: Entry?
        _ = try forEachEntry(path: path) { entry in
            if entry.input == sector, entry.completed { last = entry }
        }
        if let last, let reason = files.reason(for: last) { point.rerunReason = (sector, reason) }
    }
}
