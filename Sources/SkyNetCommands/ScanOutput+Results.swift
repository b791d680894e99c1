import SkyNetJournal
import SkyNetRuntime

extension ScanOutput {
    /// Writes results to stdout, each whole, up to 64 in one queued write; each piece is the
    /// held buffer itself, never a copy. With a journal, the write ends with the `printed`
    /// marks of these sectors, so that the writer thread records them once stdout took them
    /// (and not when writing stdout failed).
    func printResults(_ ready: [ResultOrder.Ready]?) async {
        guard let ready else { return }
        var start = 0
        while start < ready.count {
            let chunk = ready[start..<min(start + 64, ready.count)]
            start = chunk.endIndex
            var readBack = await readJournaled(chunk.compactMap { if case .journaled(let place) = $0 { place } else { nil } }).makeIterator()
            var pieces: [LineWriter.Piece] = progress == nil ? [] : [.init(Progress.clear, to: 2)]
            var printed: [Int] = []
            for item in chunk {
                switch item {
                case .line(let sector, let bytes):
                    pieces.append(.init(bytes: bytes, to: 1))
                    printed.append(sector)
                case .journaled(let place):
                    guard let bytes = readBack.next() else { continue }  // could not be read: a later resume prints it
                    pieces.append(.init(bytes: bytes, to: 1))
                    printed.append(place.sector)
                }
            }
            guard !printed.isEmpty else { continue }
            // The marks go only where the results went: a failed stdout leaves them unprinted
            // in the journal, for the resume to print.
            if let journal { pieces.append(.init(bytes: journal.printedLines(printed), to: journal.descriptor, onlyIfWritten: 1)) }
            await Console.writer.write(pieces, if: nil)
        }
    }

    /// The results at `places`, read back from the journal on the blocking pool; none when
    /// that fails (said once per failure: they stay unprinted in the journal).
    private func readJournaled(_ places: [ScanJournal.ResultPlace]) async -> [[UInt8]] {
        guard let journal, !places.isEmpty else { return [] }
        do {
            return try await onBlockingPool { try journal.results(at: places) }
        } catch {
            await self.error("\(error): \(places.count) journaled results not printed (a later --resume prints them)")
            return []
        }
    }
}
