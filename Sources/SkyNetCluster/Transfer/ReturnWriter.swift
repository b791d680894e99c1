import SkyNetAuth
import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// One file a node returns, written here only at the path the task's plan gives for it
/// (`TransferPlan.returns[i].local`), whatever the node sends: no path travels from a node.
///
/// The bytes go to a hidden `.NAME.skynet-<8 hex>.part` beside the target (made with
/// `O_EXCL`, mode 0600), hashed as written; `finish` checks size and SHA-256, `commit` gives
/// the file its mode and time and renames it over the target, so a half-received file never
/// appears under the target's name. `discard` removes the `.part` (any failure, a lost link).
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
    private var file: OpenFile?
    private var received: Int64 = 0
    private var hash = SHA256()
    private var digest: [UInt8]?

    /// Opens the target's directory and creates the `.part` for a file of `header.size` bytes
    /// sent by `peer`. Throws a `ScanFailure`: `bad-reply` over `maxSize` (the node was told
    /// the limit), `no-space` when `freeSpace` there is short, `bad-file` (final) when the
    /// target's directories pass through a link or cannot be made.
    init(target: TransferPath, header: FileHeader, maxSize: Int64, peer: String, roots: ReturnRoots,
         freeSpace: (DirectoryHandle) throws -> Int64 = { try $0.freeBytes() }) throws(ScanFailure) {
        self.target = target
        self.header = header
        reserved = roots.reserved
        guard header.size >= 0, header.size <= maxSize else {
            throw ScanFailure(code: .badReply, message: "\(peer) sent \(target) as \(ByteCount.approximate(header.size)), over --max-file-size \(ByteCount.approximate(maxSize))")
        }
        let root = roots.root(of: target)
        do {
            directory = try root.directory(target.directories, create: true)
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
        Self.removeStaleParts(of: target.name, in: directory)
        var made: (String, OpenFile)?
        for _ in 0..<4 {  // a name taken (O_EXCL) by a leftover: try another
            let name = Self.partName(for: target.name)
            do {
                made = (name, try directory.createFile(name))
                break
            } catch where error.code == EEXIST {
                continue
            } catch {
                roots.reserved.withLock { $0 -= size }
                throw ScanFailure(code: .badFile, message: "\(target) cannot be written here: \(Self.why(error))", isFinal: true)
            }
        }
        guard let (name, file) = made else {
            roots.reserved.withLock { $0 -= size }
            throw ScanFailure(code: .badFile, message: "\(target) cannot be written here: no free temporary name")
        }
        partName = name
        self.file = file
        Self.live.withLock { _ = $0.insert(name) }
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
            hash.update(bytes)
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

    /// Checks the end: every byte came, and their SHA-256 is the one the node sent.
    mutating func finish(_ end: FileEnd, peer: String) throws(ScanFailure) -> ReturnedFile {
        guard digest == nil else { throw ScanFailure(code: .badReply, message: "\(peer) ended \(target) twice") }
        guard received == header.size else {
            throw ScanFailure(code: .badReply, message: "\(peer) ended \(target) after \(received) of its \(header.size) bytes")
        }
        let sum = hash.finalize()
        guard Secrets.equal(sum, end.sha256) else {
            throw ScanFailure(code: .badFile, message: "\(target) arrived altered: SHA-256 \(Secrets.hex(sum)), sent as \(Secrets.hex(end.sha256))")
        }
        digest = sum
        return ReturnedFile(path: target.text, size: received, sha256: sum)
    }

    /// Whether every byte came and was checked.
    var isComplete: Bool { digest != nil }

    /// The file as the journal records it (its digest once `finish` checked it).
    var returned: ReturnedFile { ReturnedFile(path: target.text, size: received, sha256: digest ?? []) }

    /// Gives the file its mode (0644, or 0755 when the node's had an x bit) and time, and
    /// renames it over the target. Only after `finish`.
    mutating func commit() throws(ScanFailure) {
        guard let file, digest != nil else { throw ScanFailure(code: .badReply, message: "\(target) did not arrive whole") }
        let mode = header.mode & 0o111 != 0 ? 0o755 : 0o644
        do {
            try file.finish(mode: mode, mtimeNanoseconds: header.mtimeNanoseconds)
        } catch {
            discard()
            throw ScanFailure(code: .badFile, message: "\(target) could not be written: \(error)")
        }
        file.close()
        self.file = nil
        Self.live.withLock { _ = $0.remove(partName) }
        reserved.withLock { $0 -= header.size }
        do {
            try directory.rename(partName, to: target.name)
        } catch {
            directory.remove(partName)
            throw ScanFailure(code: .badFile, message: "\(target) could not be written: \(error)")
        }
    }

    /// Removes the `.part` (nothing of the file stays). Idempotent; after `commit`, nothing to do.
    mutating func discard() {
        guard let file else { return }
        file.close()
        self.file = nil
        directory.remove(partName)
        Self.live.withLock { _ = $0.remove(partName) }
        reserved.withLock { $0 -= header.size }
    }

    /// The `.part` names this process is writing now (random, so unique): a `.part` of the same
    /// target that is not among them was left by a coordinator that was killed, and goes.
    private static let live = Locked<Set<String>>([])

    /// Removes `.NAME.skynet-*.part` files in `directory` that no writer of this process holds.
    static func removeStaleParts(of name: String, in directory: DirectoryHandle) {
        let prefix = String(partName(for: name).dropLast(".skynet-00000000.part".utf8.count)) + ".skynet-"
        let stale = directory.names { $0.hasPrefix(prefix) && $0.hasSuffix(".part") && $0.utf8.count == prefix.utf8.count + 13 }
        let live = Self.live.withLock { $0 }
        for part in stale where !live.contains(part) { directory.remove(part) }
    }

    /// `.NAME.skynet-<8 hex>.part`, the name's start cut (at a character) so it stays a legal
    /// component (255 bytes).
    static func partName(for name: String) -> String {
        var kept = ""
        var bytes = 0
        for character in name {
            bytes += character.utf8.count
            if bytes > TransferPath.maxComponentBytes - 30 { break }
            kept.append(character)
        }
        return ".\(kept).skynet-\(Secrets.hex(Secrets.randomBytes(4))).part"
    }

    private static func why(_ error: FileError) -> String {
        error.isSymbolicLink || error.code == ENOTDIR ? "\(error.path) is a symbolic link or not a directory (never followed)" : "\(error)"
    }
}

/// Where returned files' targets start: relative ones at the scan's working directory (opened
/// once, at its start: a later `chdir` moves nothing) and absolute ones at `/`.
public struct ReturnRoots: Sendable {
    let relative: DirectoryHandle
    let absolute: DirectoryHandle
    /// Bytes that the scan's files being received still need (all file systems together: a
    /// bound on the safe side), so that files arriving at once do not count the same free space.
    let reserved = Locked<Int64>(0)

    public init(relative: DirectoryHandle, absolute: DirectoryHandle) {
        self.relative = relative
        self.absolute = absolute
    }

    /// The process's working directory and `/`.
    public static func current() throws(FileError) -> ReturnRoots {
        ReturnRoots(relative: try DirectoryHandle.open("."), absolute: try DirectoryHandle.open("/"))
    }

    /// The directory `path` starts at.
    func root(of path: TransferPath) -> DirectoryHandle { path.isAbsolute ? absolute : relative }
}
