import SkyNetRuntime
import SkyNetWork

/// What a node readies for one `basefile` before its first byte: the path checked (and not
/// stored before: a basefile given again replaces nothing), the size against
/// `--max-file-size`, the free space reserved, and the file created under the connection's
/// `base/`. Refusals are `ScanFailure`s as in `TaskUpload` (`bad-request`: the request's
/// error). Blocks on the file system: the reader thread calls it.
package final class BasefileUpload: Sendable {
    package let path: WorkPath
    package let file: OpenFile
    private let directory: DirectoryHandle
    private let reservation: FreeSpace.Reservation
    private let session: SessionFiles
    /// Whether the upload still counts as live work of the connection.
    private let open = Locked(true)

    private init(path: WorkPath, file: OpenFile, directory: DirectoryHandle, reservation: FreeSpace.Reservation, session: SessionFiles) {
        self.path = path
        self.file = file
        self.directory = directory
        self.reservation = reservation
        self.session = session
    }

    /// Readies the basefile `text` of `size` bytes for `session`, on a node taking files up
    /// to `maxFileSize`.
    package static func prepare(_ text: String, size: Int64, session: SessionFiles, maxFileSize: Int64) throws(ScanFailure) -> BasefileUpload {
        let path: WorkPath
        do { path = try WorkPath(text) } catch { throw ScanFailure(code: .badRequest, message: "path \(error.message)") }
        guard !session.isBasefile(path) else {
            throw ScanFailure(code: .badRequest, message: "path \"\(text.escapingControlCharacters)\": a basefile of that name was stored already")
        }
        let node = session.files.node
        guard size <= maxFileSize else {
            throw ScanFailure(code: .fileTooLarge, message: "\(path.text) is \(ByteCount.approximate(size)), "
                + "over \(node)'s --max-file-size \(ByteCount.approximate(maxFileSize))")
        }
        guard session.begin() else { throw ScanFailure(code: .cancelled, message: "the connection ended") }
        var reservation: FreeSpace.Reservation?
        do throws(ScanFailure) {
            let connection = try session.directory()
            let held = try session.files.space.reserve(size)
            reservation = held
            let base: DirectoryHandle
            do { base = try connection.handle.directory(["base"], create: true) } catch {
                throw TaskWorkDir.failure(error, writing: path)
            }
            let directory = try TaskWorkDir.walk(base, to: path, create: true)
            let file: OpenFile
            do { file = try directory.createFile(path.name) } catch {
                throw error.code == EEXIST
                    ? ScanFailure(code: .badRequest, message: "path \"\(text.escapingControlCharacters)\": a basefile of that name is arriving already")
                    : TaskWorkDir.failure(error, writing: path)
            }
            return BasefileUpload(path: path, file: file, directory: directory, reservation: held, session: session)
        } catch {
            reservation?.release()
            session.end()
            throw error.code == .noSpace && reservation != nil ? session.files.space.failure(needed: size) : error
        }
    }

    /// The basefile arrived whole (its digest checked): every later task of the connection
    /// gets it.
    package func stored() {
        file.close()
        session.addBasefile(path)
        finish()
    }

    /// The upload ended early (a bad chunk, a wrong digest, the connection gone): the partial
    /// file is removed, nothing stored.
    func discard() {
        file.close()
        directory.remove(path.name)
        finish()
    }

    private func finish() {
        reservation.release()
        let wasOpen = open.withLock { open in
            defer { open = false }
            return open
        }
        if wasOpen { session.end() }
    }
}
