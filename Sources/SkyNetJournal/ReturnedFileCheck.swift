import SkyNetAuth
import SkyNetRuntime
import SkyNetTransfer
import SkyNetWork

/// Whether a file a sector returned is still as its journal entry records it, for `--resume`:
/// there, reached without a symbolic link, a regular file, of that size and SHA-256. Every call
/// blocks (opens, reads, hashes): threads of our own only.
enum ReturnedFileCheck {
    /// Why the files at `targets` (each with what the journal recorded of it) no longer count
    /// as returned, for the first that does not: `photos/a.png is missing`; nil when all do.
    static func reason(_ targets: [(target: TransferPath, recorded: ReturnedFile)], in roots: ReturnRoots) -> String? {
        for (target, recorded) in targets {
            if let reason = reason(target, recorded: recorded, in: roots) { return reason }
        }
        return nil
    }

    /// Why the file at `target` no longer is what the journal `recorded`; nil when it is. The
    /// size is compared first: a file of another size is not read at all.
    static func reason(_ target: TransferPath, recorded: ReturnedFile, in roots: ReturnRoots) -> String? {
        let file: OpenFile
        do {
            let directory: DirectoryHandle
            do {
                directory = try roots.root(of: target).directory(target.directories, create: false)
            } catch {
                return reason(target, error, inDirectory: true)
            }
            file = try directory.openFile(target.name)
        } catch {
            return reason(target, error, inDirectory: false)
        }
        defer { file.close() }
        do {
            guard try file.status().size == recorded.size else { return "\(target) changed (size)" }
            let (size, digest) = try file.sizeAndSHA256()
            if size != recorded.size { return "\(target) changed (size)" }
            if digest != recorded.sha256 { return "\(target) changed (SHA-256)" }
            return nil
        } catch {
            return "\(target) could not be read: \(error)"
        }
    }

    /// Why a returned file could not be opened, in a resume's words.
    private static func reason(_ target: TransferPath, _ error: FileError, inDirectory: Bool) -> String {
        switch error.code {
        case ENOENT: "\(target) is missing"
        case _ where inDirectory && (error.code == ELOOP || error.code == ENOTDIR):
            "\(target) passes through a symbolic link or a file (\(error.path))"
        case ELOOP: "\(target) is a symbolic link"
        case EINVAL where error.reason != nil: "\(target) is not a regular file"
        default: "\(target) could not be opened: \(error)"
        }
    }
}
