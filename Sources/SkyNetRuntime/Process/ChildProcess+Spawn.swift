/// The posix_spawn calls of `ChildProcess`: descriptors, attributes, argv and environment.
/// Every descriptor the parent keeps is close-on-exec from the moment it exists, so no
/// other child (spawned by any thread) inherits it; and the child closes every descriptor
/// above 2 before it execs (`posix_spawn_file_actions_addclosefrom_np`), so a descriptor some
/// other code opened without close-on-exec does not leak into it either (save the extra
/// descriptors of `Options.descriptors`).
enum Spawner {
    /// The parent's ends of the pipes made for a child.
    struct ParentEnds {
        var stdin: Int32?
        var stdout: Int32?
        var stderr: Int32?
    }

    /// Spawns the child and returns its pid and the parent's pipe ends.
    static func spawn(_ executable: String, _ options: ChildProcess.Options) throws(ChildProcessError) -> (pid_t, ParentEnds) {
        var parent = ParentEnds()
        var childEnds: [Int32] = []  // closed in the parent once the child has them
        func closeAll() {
            for fd in childEnds + [parent.stdin, parent.stdout, parent.stderr].compactMap({ $0 }) { close(fd) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        do {
            switch options.stdin {
            case .null: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            case .file(let path): posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
            case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, 0)
            case .pipe:
                let (read, write) = try makePipe()
                childEnds.append(read)
                parent.stdin = write
                posix_spawn_file_actions_adddup2(&actions, read, 0)
            }
            parent.stdout = try addOutput(options.stdout, as: 1, to: &actions, childEnds: &childEnds)
            parent.stderr = try addOutput(options.stderr, as: 2, to: &actions, childEnds: &childEnds)
            if let directory = options.workingDirectory {
                guard let addchdir = GNU.addchdir else { throw ChildProcessError("chdir \(directory)", code: ENOSYS) }
                _ = addchdir(&actions, directory)
            }
            let highest = try addDescriptors(options.descriptors, to: &actions, childEnds: &childEnds)
            // Last, after every dup2: the pipes' child ends are closed too.
            if let addclosefrom = GNU.addclosefrom { _ = addclosefrom(&actions, highest + 1) }
        } catch let error as ChildProcessError {
            closeAll()
            throw error
        } catch {
            closeAll()
            throw ChildProcessError("spawn", code: EINVAL)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child starts with default signal handling and nothing blocked: our process
        // ignores SIGPIPE, SIGINT and SIGTERM, and an ignored signal survives exec.
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        if options.ownProcessGroup {
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        var none = sigset_t(), defaults = sigset_t()
        sigemptyset(&none)
        sigemptyset(&defaults)
        for number in 1..<32 where number != SIGKILL && number != SIGSTOP { sigaddset(&defaults, Int32(number)) }
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)

        let argv = ([executable] + options.arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var environment = options.environment
        // A group of its own is named for the keeper too, in case this process dies before
        // it can tell the keeper the group's id (see `GroupKeeper`).
        if options.ownProcessGroup, LiveGroups.isKept { environment?[GroupKeeper.ownerVariable] = String(getpid()) }
        let variables = environment.map { $0.map { "\($0.key)=\($0.value)" } }
        let envp = variables.map { $0.map { strdup($0) } + [nil] }
        defer { for pointer in envp ?? [] { free(pointer) } }

        var pid: pid_t = 0
        let result: Int32 = envp.withOptionalPointer { envp in
            options.searchPath
                ? posix_spawnp(&pid, executable, &actions, &attributes, argv, envp ?? UnsafePointer(environ))
                : posix_spawn(&pid, executable, &actions, &attributes, argv, envp ?? UnsafePointer(environ))
        }
        for fd in childEnds { close(fd) }
        childEnds = []
        guard result == 0 else {
            closeAll()
            throw ChildProcessError("cannot run '\(executable)'", code: result)
        }
        return (pid, parent)
    }

    /// Adds the file actions for one output; returns the parent's read end for the outputs
    /// this process reads (`.lines`, `.pipe`, `.bytes`, `.tail`).
    private static func addOutput(
        _ output: ChildProcess.Output, as target: Int32, to actions: inout posix_spawn_file_actions_t, childEnds: inout [Int32]
    ) throws(ChildProcessError) -> Int32? {
        switch output {
        case .null:
            posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
        case .inherit:
            break
        case .file(let path, let append):
            posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0o644)
        case .descriptor(let fd):
            posix_spawn_file_actions_adddup2(&actions, fd, target)
        case .lines, .pipe, .bytes, .tail:
            let (read, write) = try makePipe()
            childEnds.append(write)
            posix_spawn_file_actions_adddup2(&actions, write, target)
            return read
        }
        return nil
    }

    /// Adds the dup2s of `Options.descriptors` (after those onto 0, 1 and 2) and closes the
    /// other descriptors between 3 and the highest target; returns that target (2 if none).
    private static func addDescriptors(
        _ descriptors: [Int32: Int32], to actions: inout posix_spawn_file_actions_t, childEnds: inout [Int32]
    ) throws(ChildProcessError) -> Int32 {
        guard let highest = descriptors.keys.max() else { return 2 }
        guard descriptors.keys.allSatisfy({ $0 >= 3 }), highest < 1024 else {
            throw ChildProcessError("extra descriptors go to 3...1023", code: EINVAL)
        }
        for (target, source) in descriptors.sorted(by: { $0.key < $1.key }) {
            var from = source
            // The dup2s run one after another in the child: a source that is also some target
            // (or below one) could be overwritten before its turn, so it is copied above them all.
            if source <= highest {
                from = fcntl(source, F_DUPFD_CLOEXEC, highest + 1)
                guard from >= 0 else { throw ChildProcessError("descriptor \(source)", code: errno) }
                childEnds.append(from)
            }
            posix_spawn_file_actions_adddup2(&actions, from, target)
        }
        // Closing a descriptor that is not open is no error in posix_spawn.
        for fd in 3..<highest where descriptors[fd] == nil { posix_spawn_file_actions_addclose(&actions, fd) }
        return highest
    }

    /// A pipe whose both ends are close-on-exec from birth (pipe2, not pipe + fcntl: another
    /// thread may spawn in between).
    static func makePipe() throws(ChildProcessError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        #if canImport(Glibc)
        guard let pipe2 = GNU.pipe2 else { throw ChildProcessError("pipe2", code: ENOSYS) }
        guard pipe2(&fds, O_CLOEXEC) == 0 else { throw ChildProcessError("pipe", code: errno) }
        #else
        guard pipe(&fds) == 0 else { throw ChildProcessError("pipe", code: errno) }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        #endif
        return (fds[0], fds[1])
    }
}

/// GNU extensions Swift's Glibc module hides (they need _GNU_SOURCE), looked up once.
enum GNU {
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
    typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
    typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
    typealias AddClosefrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    static let pipe2: Pipe2? = symbol("pipe2").map { unsafeBitCast($0, to: Pipe2.self) }
    static let addchdir: AddChdir? = symbol("posix_spawn_file_actions_addchdir_np").map { unsafeBitCast($0, to: AddChdir.self) }
    /// glibc 2.36 and later: a descriptor that polls readable when the process exits. It is
    /// close-on-exec from birth.
    static let pidfdOpen: PidfdOpen? = symbol("pidfd_open").map { unsafeBitCast($0, to: PidfdOpen.self) }
    /// glibc 2.34 and later; without it the parent's close-on-exec flags are the only guard.
    static let addclosefrom: AddClosefrom? = symbol("posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddClosefrom.self)
    }

    private static func symbol(_ name: String) -> UnsafeMutableRawPointer? {
        #if canImport(Glibc)
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name)  // RTLD_DEFAULT
        #else
        dlsym(UnsafeMutableRawPointer(bitPattern: -2), name)
        #endif
    }
}

private extension Optional where Wrapped == [UnsafeMutablePointer<CChar>?] {
    /// Passes the array's pointer (or nil) to `body`.
    func withOptionalPointer<R>(_ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>?) -> R) -> R {
        guard let self else { return body(nil) }
        return self.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}

extension ChildProcess {
    /// A pipe whose both ends are close-on-exec from birth, for the ends a caller hands a child.
    package static func makePipe() throws(ChildProcessError) -> (read: Int32, write: Int32) { try Spawner.makePipe() }
}
