import SkyNetAuth
import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// One file a node returns, written here only at the path the task's plan gives for it
/// (`TransferPlan.returns[i].local`), whatever the node sends: no path travels from a node.
///
/// The bytes go to a hidden `.NAME.skynet.part` beside the target (`partName`: one name per
/// target, so no directory is ever listed to find leftovers; made with `O_EXCL`, mode 0600),
/// hashed as written when a digest is checked or kept (`ReturnDigests`); `finish` checks the size
/// and, on a link of files version 1, the SHA-256 the node sent; `commit` gives the file its mode and
/// time and renames it over the target, so a half-received file never appears under the
/// target's name. `discard` removes the `.part` (any failure, a lost link).
///
/// A `.part` already at that name is a leftover of a coordinator killed mid-file, or the
/// part of another write of the same target now (two inputs whose templates name one file):
/// it is removed and made anew. The write that lost its part that way fails at `commit` (the
/// task runs again) and never renames what is at the name now: `commit` and `discard` act on
/// the name only while it is still their own file (`DirectoryHandle.holds`), and the making,
/// checking, renaming and removing of parts is one at a time in this process (`parts`).
/// The target's directories are opened one component at a time without following a link
/// (made when missing): a link on the way is refused, never followed.
///
/// Every call blocks (file system calls): the connection's reader thread or a thread of our
/// own, never the cooperative pool. A value with one owner (the task's `ReturnSink`, under its lock).
struct ReturnWriter: Sendable {
    /// The target, as the plan gives it (for messages and the journal).
    let target: TransferPath
    let header: FileHeader
    private let directory: DirectoryHandle
    private let partName: String
    /// The scan's bytes reserved by files arriving (its roots'), this one's among them until
    /// its commit or discard.
    private let reserved: Locked<Int64>
    /// The scan's umask, which the file's mode follows.
    private let umask: Int
    private var file: OpenFile?
    private var received: Int64 = 0
    /// nil: the bytes are not hashed (no digest to check or keep).
    private var hash: SHA256?
    private let checksDigest: Bool
    /// Set by `finish`: every byte came and checked out (the digest, when one was computed).
    private var digest: [UInt8]?

    /// Opens the target's directory and creates the `.part` for a file of `header.size` bytes
    /// sent by `peer`. Throws a `ScanFailure`: `bad-reply` over `maxSize` (the node was told
    /// the limit), `no-space` when `freeSpace` there is short, `bad-file` (final) when the
    /// target's directories pass through a link or cannot be made.
    init(target: TransferPath, header: FileHeader, maxSize: Int64, peer: String, roots: ReturnRoots,
         digests: ReturnDigests = ReturnDigests(check: true, keep: true),
         freeSpace: (DirectoryHandle) throws -> Int64 = { try $0.freeBytes() }) throws(ScanFailure) {
        self.target = target
        self.header = header
        checksDigest = digests.check
        hash = digests.check || digests.keep ? SHA256() : nil
        reserved = roots.reserved
        umask = roots.umask
        guard header.size >= 0, header.size <= maxSize else {
            throw ScanFailure(code: .badReply, message: "\(peer) sent \(target) as \(ByteCount.approximate(header.size)), over --max-file-size \(ByteCount.approximate(maxSize))")
        }
        let root = roots.root(of: target)
        do {
            directory = try root.directory(target.directories, create: true, mode: 0o777 & ~roots.umask)
        } catch {
            throw ScanFailure(code: .badFile, message: "\(target) cannot be written here: \(Self.why(error))", isFinal: true)
        }
        let free: Int64
        do { free = try freeSpace(directory) } catch { free = .max }  // unknown: the write itself will tell
        let size = header.size
        let left = roots.reserved.withLock { reserved -> Int64? in
            let left = free == .max ? free : free - reserved
            guard left >= size else { return left }
            reserved += size
            return nil
        }
        if let left {
            throw ScanFailure(code: .noSpace, message: "no space here for \(target): \(ByteCount.mebibytesDown(left)) MiB free, \(ByteCount.mebibytesUp(size)) MiB needed")
        }
        let name = Self.partName(for: target.name)
        let here = directory
        do throws(FileError) {
            file = try Self.parts.withLock { (_) throws(FileError) -> OpenFile in
                do throws(FileError) {
                    return try here.createFile(name)
                } catch where error.code == EEXIST {
                    here.remove(name)  // a leftover, or another write's part: this one's now
                    return try here.createFile(name)
                }
            }
        } catch {
            roots.reserved.withLock { $0 -= size }
            throw ScanFailure(code: .badFile, message: "\(target) cannot be written here: \(Self.why(error))", isFinal: true)
        }
        partName = name
    }

    /// Writes one chunk; it must start where the bytes so far end and stay within the size.
    mutating func append(_ chunk: FileChunk, peer: String) throws(ScanFailure) {
        guard let file, digest == nil else { throw ScanFailure(code: .badReply, message: "\(peer) sent bytes of \(target) after its end") }
        guard chunk.offset == received else {
            throw ScanFailure(code: .badReply, message: "\(peer) sent \(target) at offset \(chunk.offset), not \(received)")
        }
        guard Int64(chunk.bytes.count) <= header.size - received else {
            throw ScanFailure(code: .badReply, message: "\(peer) sent more of \(target) than its \(header.size) bytes")
        }
        let at = received
        let failed = chunk.bytes.withUnsafeBytes { (bytes) -> FileError? in
            hash?.update(bytes)
            do throws(FileError) {
                try file.write(bytes, at: at)
                return nil
            } catch {
                return error
            }
        }
        if let failed {
            if failed.code == ENOSPC {
                throw ScanFailure(code: .noSpace, message: "no space here for \(target): the disk filled while it arrived")
            }
            throw ScanFailure(code: .badFile, message: "\(target) could not be written: \(failed)")
        }
        received += Int64(chunk.bytes.count)
    }

    /// Checks the end: every byte came, and (files version 1) their SHA-256 is the one the
    /// node sent.
    mutating func finish(_ end: FileEnd, peer: String) throws(ScanFailure) -> ReturnedFile {
        guard digest == nil else { throw ScanFailure(code: .badReply, message: "\(peer) ended \(target) twice") }
        guard received == header.size else {
            throw ScanFailure(code: .badReply, message: "\(peer) ended \(target) after \(received) of its \(header.size) bytes")
        }
        let sum = hash?.finalize() ?? []
        if checksDigest {
            guard let sent = end.sha256 else { throw ScanFailure(code: .badReply, message: "\(peer) ended \(target) without its SHA-256") }
            guard Secrets.equal(sum, sent) else {
                throw ScanFailure(code: .badFile, message: "\(target) arrived altered: SHA-256 \(Secrets.hex(sum)), sent as \(Secrets.hex(sent))")
            }
        }
        digest = sum
        return ReturnedFile(path: target.text, size: received, sha256: sum)
    }

    /// Whether every byte came and was checked.
    var isComplete: Bool { digest != nil }

    /// The file as the journal records it (its digest once `finish` checked it).
    var returned: ReturnedFile { ReturnedFile(path: target.text, size: received, sha256: digest ?? []) }

    /// Gives the file its mode (the permission bits that travelled, never setuid, setgid or
    /// sticky, less the umask: as `cp` makes a copy) and time, and renames it over the target.
    /// Only after `finish`.
    mutating func commit() throws(ScanFailure) {
        guard let file, digest != nil else { throw ScanFailure(code: .badReply, message: "\(target) did not arrive whole") }
        let mode = header.mode & 0o777 & ~umask
        do {
            try file.finish(mode: mode, mtimeNanoseconds: header.mtimeNanoseconds)
        } catch {
            discard()
            throw ScanFailure(code: .badFile, message: "\(target) could not be written: \(error)")
        }
        defer { file.close() }
        self.file = nil
        reserved.withLock { $0 -= header.size }
        let placed = Self.parts.withLock { placedSoFar -> Result<Bool, FileError> in
            guard directory.holds(partName, file: file) else { return .success(false) }
            do throws(FileError) {
                try directory.rename(partName, to: target.name)
                placedSoFar += 1
                return .success(true)
            } catch {
                directory.remove(partName)
                return .failure(error)
            }
        }
        switch placed {
        case .success(true):
            return
        case .success(false):
            throw ScanFailure(code: .badFile, message: "\(target) could not be written: another write of the same path took its temporary name meanwhile (do two inputs return it?)")
        case .failure(let error):
            throw ScanFailure(code: .badFile, message: "\(target) could not be written: \(error)")
        }
    }

    /// Removes the `.part` (nothing of the file stays). Idempotent; after `commit`, nothing to do.
    mutating func discard() {
        guard let file else { return }
        self.file = nil
        Self.parts.withLock { _ in
            if directory.holds(partName, file: file) { directory.remove(partName) }
        }
        file.close()
        reserved.withLock { $0 -= header.size }
    }

    /// Held while a part is made, checked and renamed, or checked and removed: within this
    /// process, a write that finds its part still its own renames or removes that file, never
    /// the part another write of the same target has made at the name since. It counts the
    /// parts placed, rather than guarding nothing: a state of no size lies at the lock object's
    /// own address, where ThreadSanitizer took the lock's use for a write racing every read of
    /// the object's header.
    private static let parts = Locked(0)

    /// The name of the `.part` of target `name` beside it: `.NAME.skynet.part`, one per
    /// target (a leftover is found by its name alone); when that is over 255 bytes (a legal
    /// component's most), `.skynet-<32 hex of the name's SHA-256>.part`.
    static func partName(for name: String) -> String {
        let plain = ".\(name).skynet.part"
        if plain.utf8.count <= TransferPath.maxComponentBytes { return plain }
        return ".skynet-\(Secrets.hex(Array(SHA256.hash(Array(name.utf8)).prefix(16)))).part"
    }

    private static func why(_ error: FileError) -> String {
        error.isSymbolicLink || error.code == ENOTDIR ? "\(error.path) is a symbolic link or not a directory (never followed)" : "\(error)"
    }
}

/// Where returned files' targets start: relative ones at the scan's working directory (opened
/// once, at its start: a later `chdir` moves nothing) and absolute ones at `/`.
package struct ReturnRoots: Sendable {
    let relative: DirectoryHandle
    let absolute: DirectoryHandle
    /// The umask the returned files and their new directories follow (`Umask.current`; a
    /// test gives its own).
    let umask: Int
    /// Bytes that the scan's files being received still need (all file systems together: a
    /// bound on the safe side), so that files arriving at once do not count the same free space.
    let reserved = Locked<Int64>(0)

    package init(relative: DirectoryHandle, absolute: DirectoryHandle, umask: Int = Umask.current) {
        self.relative = relative
        self.absolute = absolute
        self.umask = umask & 0o777
    }

    /// The process's working directory and `/`.
    package static func current() throws(FileError) -> ReturnRoots {
        ReturnRoots(relative: try DirectoryHandle.open("."), absolute: try DirectoryHandle.open("/"))
    }

    /// The directory `path` starts at.
    package func root(of path: TransferPath) -> DirectoryHandle { path.isAbsolute ? absolute : relative }
}

/// What is done with a returned file's SHA-256.
package struct ReturnDigests: Sendable {
    /// The node's `end` carries it, and it must match (files version 1).
    package var check: Bool
    /// It is computed as the bytes arrive, for the journal, when the node sends none.
    package var keep: Bool

    package init(check: Bool, keep: Bool) {
        self.check = check
        self.keep = keep
    }
}
