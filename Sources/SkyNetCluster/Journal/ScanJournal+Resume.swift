import SkyNetRuntime
import SkyNetWork

extension ScanJournal {
    /// What a resumed scan takes from its journal: the sectors that completed and, with an
    /// inputs file, a fingerprint of the input each ran with (four bytes a sector).
    public struct ResumePoint: Sendable {
        /// The completed sectors in `0..<total`.
        public private(set) var sectors: SectorSet
        /// Lines that could not be read as entries.
        public internal(set) var skipped = 0
        private var fingerprints: [UInt32]
        /// Sectors whose result a `printed` mark after their last completed entry says reached
        /// stdout.
        private var printed: SectorSet

        init(total: Int, fingerprints: Bool) {
            sectors = SectorSet(total: total)
            printed = SectorSet(total: total)
            self.fingerprints = fingerprints ? Array(repeating: 0, count: max(0, total)) : []
        }

        /// How many sectors completed.
        public var count: Int { sectors.count }

        /// The fingerprint of the input `sector` completed with; nil when it did not complete.
        public func fingerprint(of sector: Int) -> UInt32? {
            sectors.contains(sector) && sector < fingerprints.count ? fingerprints[sector] : nil
        }

        /// The completed sectors whose result no `printed` mark follows (`ScanJournal+Printed`).
        public var unprinted: SectorSet { sectors.subtracting(printed) }

        mutating func add(_ entry: Entry) {
            sectors.insert(entry.input)
            printed.remove(entry.input)  // a mark counts only for the entry before it
            if sectors.contains(entry.input), entry.input < fingerprints.count {
                fingerprints[entry.input] = inputFingerprint(entry.inputText)
            }
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
    public static func readResumePoint(path: String, total: Int, inputsFile: Bool, job: String = JobRegistry.scan) async throws -> ResumePoint {
        try await onOwnThread(named: "journal-read") { () throws -> ResumePoint in
            var point = ResumePoint(total: total, fingerprints: inputsFile)
            var mismatch: Entry?
            var otherJob: Entry?
            point.skipped = try forEachLine(path: path) { line, _ in
                guard case .entry(let entry) = line else {
                    if case .printed(let range) = line { point.markPrinted(range) }
                    return
                }
                // A sector outside this scan's range is of no concern to it (adding it does nothing).
                guard entry.completed, entry.input >= 0, entry.input < total else { return }
                if entry.jobName != job, otherJob == nil { otherJob = entry }
                if !inputsFile, let text = entry.text, text != String(entry.input), mismatch == nil { mismatch = entry }
                point.add(entry)
            }
            if let mismatch {
                throw Failure(description: "journal \(path): sector \(mismatch.input) ran with the input \(String((mismatch.text ?? "").prefix(60)).debugDescription) from an inputs file, but this scan has none: resume with --inputs and the file it was written with, or start a new journal")
            }
            if let otherJob {
                throw Failure(description: "journal \(path): sector \(otherJob.input) ran the job '\(otherJob.jobName)', but this scan runs the job '\(job)': resume with --job \(otherJob.jobName), or start a new journal")
            }
            return point
        }
    }
}
