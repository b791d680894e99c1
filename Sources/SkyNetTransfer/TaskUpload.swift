import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// What a node readies for one `transfer` before the first byte of its input arrives, in the
/// order of the design (issue21-design.md §2): the paths checked, a place of the capacity
/// (`busy` at once), the size against `--max-file-size`, the free space reserved, then the
/// task's directory with the connection's basefiles linked in and the input file created.
///
/// Every refusal is a `ScanFailure`; one coded `bad-request` is the request's error (the
/// coordinator named a path the node refuses), every other its `failure`. Whatever fails
/// undoes what was done before it. Blocks on the file system: the reader thread calls it.
package final class TaskUpload: Sendable {
    /// What the request asks for, taken from the wire's `transfer`.
    package struct Request: Sendable {
        package var sector: Int
        /// `task.input`: with a file, where it goes in the work directory.
        package var input: String
        /// The size of the input file; nil when the request carries none (the input is text).
        package var fileSize: Int64?
        package var returns: [String]

        package init(sector: Int, input: String, fileSize: Int64?, returns: [String]) {
            self.sector = sector
            self.input = input
            self.fileSize = fileSize
            self.returns = returns
        }
    }

    package let workDir: TaskWorkDir
    /// The input's path and file, open for writing; nil without a file.
    package let input: (path: WorkPath, file: OpenFile)?
    package let returns: [WorkPath]
    /// The free space held for the input until it is written (nil without a file).
    let reservation: FreeSpace.Reservation?
    private let files: NodeFiles
    /// Whether the upload still holds its place of the capacity.
    private let holdsPlace = Locked(true)

    private init(workDir: TaskWorkDir, input: (path: WorkPath, file: OpenFile)?, returns: [WorkPath],
                 reservation: FreeSpace.Reservation?, files: NodeFiles) {
        self.workDir = workDir
        self.input = input
        self.returns = returns
        self.reservation = reservation
        self.files = files
    }

    /// Readies `request` in `connection`, on a node running `running` of `capacity` tasks.
    /// `basefiles` are the connection's (in `base`).
    package static func prepare(_ request: Request, node: String, files: NodeFiles, maxFileSize: Int64,
                        running: Int, capacity: Int, connection: ConnectionDirectory,
                        basefiles: [WorkPath], base: DirectoryHandle?) throws(ScanFailure) -> TaskUpload {
        let (input, returns) = try paths(of: request, basefiles: basefiles)
        guard files.takeUploadPlace(running: running, capacity: capacity) else { throw ScanFailure.busy(node, capacity: capacity) }
        var reservation: FreeSpace.Reservation?
        do throws(ScanFailure) {
            if let size = request.fileSize, let input {
                guard size <= maxFileSize else {
                    throw ScanFailure(code: .fileTooLarge, message: "\(input.text) is \(ByteCount.approximate(size)), "
                        + "over \(node)'s --max-file-size \(ByteCount.approximate(maxFileSize))")
                }
                reservation = try files.space.reserve(size)
            }
            let workDir: TaskWorkDir
            do { workDir = try TaskWorkDir.create(in: connection, sector: request.sector) } catch {
                throw ScanFailure(code: error.code == ENOSPC ? .noSpace : .taskFailed,
                                  message: "cannot make the task's directory on \(node): \(error)")
            }
            do throws(ScanFailure) {
                if let base, !basefiles.isEmpty { try workDir.linkBasefiles(basefiles, from: base) }
                var file: (path: WorkPath, file: OpenFile)?
                if let input, request.fileSize != nil { file = (input, try workDir.createFile(at: input)) }
                return TaskUpload(workDir: workDir, input: file, returns: returns, reservation: reservation, files: files)
            } catch {
                workDir.remove()
                throw error
            }
        } catch {
            reservation?.release()
            files.giveBackUploadPlace()
            // The disk filled up under us: said with the numbers of this moment.
            throw error.code == .noSpace && reservation != nil ? files.space.failure(needed: request.fileSize ?? 0) : error
        }
    }

    /// The request's paths, each checked, named by its field in a refusal: `returns[0]
    /// "../x": a ".." component is refused`. The input is a path only with a file. A basefile
    /// is never an input or a return (it would be replaced, or sent back as the job's work).
    private static func paths(of request: Request, basefiles: [WorkPath]) throws(ScanFailure) -> (WorkPath?, [WorkPath]) {
        func field(_ name: String, _ text: String) throws(ScanFailure) -> WorkPath {
            let path: WorkPath
            do { path = try WorkPath(text) } catch { throw ScanFailure(code: .badRequest, message: "\(name) \(error.message)") }
            if basefiles.contains(where: { $0.namesSameFile(as: path) }) {
                throw ScanFailure(code: .badRequest, message: "\(name) \"\(text.escapingControlCharacters)\": a basefile has that name")
            }
            return path
        }
        let input = request.fileSize == nil ? nil : try field("task.input", request.input)
        var returns: [WorkPath] = []
        for (index, text) in request.returns.enumerated() { returns.append(try field("returns[\(index)]", text)) }
        return (input, returns)
    }

    /// The task starts running: from now on it holds a slot of the system, not an upload's
    /// place. Also called when it ends before it ran (`discard`); later calls do nothing.
    package func started() {
        let held = holdsPlace.withLock { held in
            defer { held = false }
            return held
        }
        if held { files.giveBackUploadPlace() }
    }

    /// The upload ended early (cancel, a bad chunk, a lost connection): the input is closed,
    /// the reservation and the place given back, and the directory removed.
    package func discard() {
        input?.file.close()
        reservation?.release()
        started()
        workDir.remove()
    }
}
