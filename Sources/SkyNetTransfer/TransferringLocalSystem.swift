import SkyNetAuth
import SkyNetRuntime
import SkyNetScheduler
import SkyNetWork

/// The coordinator's own system in a scan whose files travel: nothing is copied here
/// (the input, the basefiles and the working directory are those of the scan), so it runs the
/// task on the wrapped `LocalSystem` unchanged; then each `--return` file must be there,
/// at the path its template gives, a regular file reached without a symbolic link, and is
/// hashed for the journal (`records`). A missing one fails the task (`did not produce
/// photos/a.png`), retried like any failure; a path that cannot travel is refused at once (final).
package actor TransferringLocalSystem: ScanSystem {
    package nonisolated let name: String
    package nonisolated var isLocal: Bool { true }
    package nonisolated let wrapped: LocalSystem
    package nonisolated let spec: TransferSpec
    private nonisolated let records: ReturnRecords
    private nonisolated let roots: ReturnRoots?

    /// `roots`: where the returned files are looked for; nil opens the working directory and
    /// `/` for each task.
    package init(wrapping local: LocalSystem, spec: TransferSpec, records: ReturnRecords, roots: ReturnRoots? = nil) {
        name = local.name
        wrapped = local
        self.spec = spec
        self.records = records
        self.roots = roots
    }

    package nonisolated func run(_ task: ScanTask) async throws -> String {
        let plan: TransferPlan
        do { plan = try spec.plan(for: task) } catch { throw ScanFailure(code: .badFile, message: error.description, isFinal: true) }
        let result = try await wrapped.run(task)
        let targets = plan.returns.map(\.local)
        guard !targets.isEmpty else { return result }
        let roots = self.roots, name = self.name
        let files = try await onBlockingPool { () throws -> [ReturnedFile] in
            let roots = try roots ?? ReturnRoots.current()
            return try targets.map { target throws(ScanFailure) in try Self.check(target, in: roots, on: name) }
        }
        records.put(task.id, files)
        return result
    }

    /// Opens `target` without following a link, and hashes it. Blocks: a thread of our own.
    static func check(_ target: TransferPath, in roots: ReturnRoots, on system: String) throws(ScanFailure) -> ReturnedFile {
        let directory: DirectoryHandle, file: OpenFile
        do {
            directory = try roots.root(of: target).directory(target.directories, create: false)
        } catch {
            throw Self.missing(target, error, inDirectory: true)
        }
        do {
            file = try directory.openFile(target.name)
        } catch {
            throw Self.missing(target, error, inDirectory: false)
        }
        defer { file.close() }
        let size: Int64, digest: [UInt8]
        do {
            (size, digest) = try file.sizeAndSHA256()
        } catch {
            throw ScanFailure(code: .missingReturn, message: "\(target) could not be read on \(system): \(error)")
        }
        return ReturnedFile(path: target.text, size: size, sha256: digest)
    }

    /// The failure for a return that is not there as a regular file, by name.
    static func missing(_ target: TransferPath, _ error: FileError, inDirectory: Bool) -> ScanFailure {
        switch error.code {
        case ENOENT: ScanFailure(code: .missingReturn, message: "did not produce \(target)")
        case _ where inDirectory && (error.code == ELOOP || error.code == ENOTDIR):
            ScanFailure(code: .missingReturn, message: "\(target) passes through a symbolic link or a file (\(error.path)): not returned")
        case ELOOP: ScanFailure(code: .missingReturn, message: "\(target) is a symbolic link: not returned")
        case EINVAL where error.reason != nil: ScanFailure(code: .missingReturn, message: "\(target) is not a regular file: not returned")
        default: ScanFailure(code: .missingReturn, message: "\(target) could not be opened: \(error)")
        }
    }
}
