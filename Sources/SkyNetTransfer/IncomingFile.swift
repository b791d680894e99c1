import SkyNetAuth
import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// A file a node receives (a transfer's input, a basefile): each chunk is checked (its offset
/// is the bytes received so far, nothing past the announced size) and written where it
/// belongs; at `end` the size must be what was announced and, on a link of files version 1,
/// the SHA-256 what the sender computed. On version 2 nothing is hashed: the link's own
/// integrity (AEAD frames, the ssh channel) already covers every byte.
///
/// Used on the connection's reader thread only (one line at a time): not `Sendable`.
final class IncomingFile {
    private let file: OpenFile
    private let header: FileHeader
    private let name: String
    private let discarding: (() -> Void)?
    private var received: Int64 = 0
    /// nil: no digest is checked (files version 2).
    private var hasher: SHA256?
    private var ended = false

    /// Receives into `file` (created empty) the file `header` announced; `name` is how
    /// messages call it; `digests`: whether its `end` carries the SHA-256 to check;
    /// `discarding` removes what was written (called by `discard`).
    init(file: OpenFile, header: FileHeader, name: String, digests: Bool, discarding: (() -> Void)? = nil) {
        self.file = file
        hasher = digests ? SHA256() : nil
        self.header = header
        self.name = name
        self.discarding = discarding
    }

    /// Writes one chunk; throws `bad-file` when it is not the next one or goes past the size,
    /// `no-space` when the disk is full.
    func append(_ chunk: FileChunk) throws(ScanFailure) {
        guard !ended else { throw altered("a chunk came after its end") }
        guard chunk.offset == received else { throw altered("a chunk at offset \(chunk.offset), \(received) bytes expected") }
        let count = Int64(chunk.bytes.count)
        guard count <= header.size - received else { throw altered("more than the \(header.size) bytes announced") }
        let written = chunk.bytes.withUnsafeBytes { bytes -> FileError? in
            hasher?.update(bytes)
            do throws(FileError) { try file.write(bytes, at: received) } catch { return error }
            return nil
        }
        if let written {
            if written.code == ENOSPC || written.code == EDQUOT {
                throw ScanFailure(code: .noSpace, message: "no space left for \(name) (\(header.size - received) bytes still to come)")
            }
            throw ScanFailure(code: .taskFailed, message: "cannot write \(name): \(written)")
        }
        received += count
    }

    /// Checks the end: every byte there and the digest the sender computed. The file then gets
    /// the announced time and mode (`mode & 0o755 | 0o400`: the x bits travel, setuid never).
    func finish(_ end: FileEnd) throws(ScanFailure) {
        guard !ended else { throw altered("it ended twice") }
        ended = true
        guard received == header.size else { throw altered("\(received) of \(header.size) bytes") }
        if var hasher {
            let digest = hasher.finalize()
            guard let sent = end.sha256 else { throw altered("its end carries no SHA-256") }
            guard Secrets.equal(digest, sent) else {
                throw altered("SHA-256 \(Secrets.hex(digest).prefix(8))…, sent as \(Secrets.hex(sent).prefix(8))…")
            }
        }
        do {
            try file.finish(mode: Self.keptMode(header.mode), mtimeNanoseconds: header.mtimeNanoseconds)
        } catch {
            throw ScanFailure(code: .taskFailed, message: "cannot finish \(name): \(error)")
        }
        file.close()
    }

    /// Gives up on the file: closes it and removes what was written.
    func discard() {
        ended = true
        file.close()
        discarding?()
    }

    /// The mode a received file keeps: its read, write and x bits for the owner, read and x
    /// for others; never setuid, setgid or sticky, always readable by its owner.
    static func keptMode(_ mode: Int) -> Int { mode & 0o755 | 0o400 }

    private func altered(_ how: String) -> ScanFailure {
        ScanFailure(code: .badFile, message: "\(name) arrived altered: \(how)")
    }
}
