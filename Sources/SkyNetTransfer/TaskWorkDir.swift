import SkyNetRuntime
import SkyNetWork

/// One task's private work directory, `conn-<N>/task-<sector>-<K>/`: its command runs there,
/// its input file and the connection's basefiles are put there, its returns are read from
/// there. Every path under it is opened one component at a time without following a link,
/// so neither a coordinator's path nor a link the job planted leads anywhere else.
///
/// Called on a connection's reader thread or a thread of its own: every call blocks on the
/// file system.
package final class TaskWorkDir: Sendable {
    /// `task-<sector>-<K>`.
    let name: String
    let connection: ConnectionDirectory
    let handle: DirectoryHandle

    private init(name: String, connection: ConnectionDirectory, handle: DirectoryHandle) {
        self.name = name
        self.connection = connection
        self.handle = handle
    }

    /// The absolute path: the command's working directory.
    package var path: String { connection.path + "/" + name }

    /// Makes a new, empty work directory for a task of `sector`.
    static func create(in connection: ConnectionDirectory, sector: Int) throws(FileError) -> TaskWorkDir {
        let name = connection.nextTaskName(sector: sector)
        return TaskWorkDir(name: name, connection: connection, handle: try connection.handle.directory([name], create: true))
    }

    /// Creates the file at `path` (its directories made as needed), empty, mode 0600: a file
    /// already there (a basefile, a link) is refused, never opened or replaced.
    func createFile(at path: WorkPath) throws(ScanFailure) -> OpenFile {
        let directory = try Self.walk(handle, to: path, create: true)
        do {
            return try directory.createFile(path.name)
        } catch {
            throw error.code == EEXIST
                ? ScanFailure(code: .badRequest, message: "\(path.text) is there already (a basefile has that name)")
                : Self.failure(error, writing: path)
        }
    }

    /// Opens the return file at `path` for reading: a regular file the job made, not a link
    /// and not reached through one; else `missing-return`, saying why by name.
    package func openReturn(_ path: WorkPath) throws(ScanFailure) -> OpenFile {
        func refuse(_ why: String) -> ScanFailure { ScanFailure(code: .missingReturn, message: why) }
        let directory: DirectoryHandle
        do {
            directory = try Self.walk(handle, to: path, create: false)
        } catch where error.code == .badRequest {
            throw refuse("\(error.message): not returned")
        } catch {
            throw refuse("did not produce \(path.text)")
        }
        let file: OpenFile
        do {
            file = try directory.openFile(path.name)
        } catch {
            switch error.code {
            case ENOENT: throw refuse("did not produce \(path.text)")
            case ELOOP: throw refuse("\(path.text) is a symbolic link: not returned")
            case EINVAL, EISDIR, ENXIO, ENODEV, EOPNOTSUPP: throw refuse("\(path.text) is not a regular file: not returned")
            default: throw refuse("\(path.text) cannot be read: \(String(cString: strerror(error.code)))")
            }
        }
        guard (try? file.status().isRegular) == true else {
            file.close()
            throw refuse("\(path.text) is not a regular file: not returned")
        }
        return file
    }

    /// Puts each basefile of `base` (the connection's `base/`) into this directory at its own
    /// relative path: a hard link (no copy, and nothing to refuse on the way back), a copy
    /// where the file system refuses the link.
    func linkBasefiles(_ paths: [WorkPath], from base: DirectoryHandle) throws(ScanFailure) {
        for path in paths {
            let source = try Self.walk(base, to: path, create: false)
            let target = try Self.walk(handle, to: path, create: true)
            do {
                try source.link(path.name, to: target, as: path.name)
            } catch where [EXDEV, EPERM, EMLINK].contains(error.code) {
                try Self.copy(path, from: source, to: target)
            } catch {
                throw error.code == EEXIST
                    ? ScanFailure(code: .badRequest, message: "basefile \(path.text) has the name of the task's input")
                    : Self.failure(error, writing: path)
            }
        }
    }

    /// Removes the directory and everything in it; links go as names, never followed.
    package func remove() {
        connection.handle.removeTree(name)
    }
}

extension TaskWorkDir {
    /// Opens the directories of `path` under `top` one by one, so that a refusal names the
    /// component that is a link: `photos/a.jpg passes through a symbolic link (photos)`.
    static func walk(_ top: DirectoryHandle, to path: WorkPath, create: Bool) throws(ScanFailure) -> DirectoryHandle {
        var directory = top
        for (index, component) in path.directories.enumerated() {
            do {
                directory = try directory.directory([component], create: create)
            } catch where error.code == ELOOP || error.code == ENOTDIR {
                let through = path.prefix(index + 1)
                throw ScanFailure(code: .badRequest, message: isLink(component, in: directory)
                    ? "\(path.text) passes through a symbolic link (\(through))"
                    : "\(path.text) passes through \(through), which is not a directory")
            } catch {
                throw failure(error, writing: path)
            }
        }
        return directory
    }

    /// Whether `name` in `directory` is a symbolic link: Linux says ENOTDIR, not ELOOP, when
    /// `O_DIRECTORY | O_NOFOLLOW` meets one, as for a file; opening it as a file without
    /// following tells them apart (ELOOP only for the link).
    private static func isLink(_ name: String, in directory: DirectoryHandle) -> Bool {
        do {
            try directory.openFile(name).close()
            return false
        } catch {
            return error.code == ELOOP
        }
    }

    /// Copies the basefile `path` from `source` to `target` (the same name in both), keeping
    /// its mode and time.
    static func copy(_ path: WorkPath, from source: DirectoryHandle, to target: DirectoryHandle) throws(ScanFailure) {
        do throws(FileError) {
            let input = try source.openFile(path.name)
            defer { input.close() }
            let output = try target.createFile(path.name)
            defer { output.close() }
            let status = try input.status()
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
            defer { buffer.deallocate() }
            var offset: Int64 = 0
            while case let count = try input.read(into: buffer, at: offset), count > 0 {
                try output.write(UnsafeRawBufferPointer(rebasing: buffer[..<count]), at: offset)
                offset += Int64(count)
            }
            try output.finish(mode: status.mode, mtimeNanoseconds: status.mtimeNanoseconds)
        } catch {
            throw failure(error, writing: path)
        }
    }

    /// A file system failure while putting `path` in place (ENOSPC is the caller's to word
    /// with the free space: `FreeSpace.failure`).
    static func failure(_ error: FileError, writing path: WorkPath) -> ScanFailure {
        ScanFailure(code: error.code == ENOSPC ? .noSpace : .taskFailed,
                    message: "cannot write \(path.text): \(String(cString: strerror(error.code)))")
    }
}
