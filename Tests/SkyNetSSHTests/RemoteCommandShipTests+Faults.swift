import Foundation
@testable import SkyNetCluster
import SkyNetLocalHosts
@testable import SkyNetRuntime
@testable import SkyNetSSH
import SkyNetTestSupport
import Testing

/// `--ship` on hosts where the copy cannot be kept or cannot start, and uploads cut short: the
/// remote commands run by a real `/bin/sh` with a HOME of the test's own.
extension RemoteCommandShipTests {
    func copy(of shipment: SSHShipment, in home: String) -> String { "\(home)/.cache/skynet/skynet-\(shipment.sha256)" }

    func uploaded(_ shipment: SSHShipment, home: String) async throws {
        let upload = try await run(RemoteCommand.upload(shipment), home: home, stdin: shipment.path)
        try #require(upload.exit.succeeded, "\(upload.stderr)")
    }

    func classified(_ run: Run) -> SSHFailure {
        let lines = run.stderr.split(separator: "\n").map(String.init)
        return SSHFailure.classify(exit: run.exit, lastLine: lines.last, host: "h", checkHint: "ssh h true", lines: lines)
    }

    /// What a cached copy that is not this build may be: each still runs.
    enum Damage: CaseIterable, Sendable {
        /// A script that does what it likes, then runs as the build would.
        case replacedByAScript
        /// The build with 33 bytes more (a comment line: it still runs).
        case thirtyThreeBytesAppended
        /// The first half of the build.
        case cutInHalf

        /// The damaged bytes of `build`.
        func bytes(of build: String) throws -> Data {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: build))
            return switch self {
            case .replacedByAScript: Data("#!/bin/sh\ntouch \"$HOME/ran\"\nprintf '%s\\n' \"$@\"\n".utf8)
            case .thirtyThreeBytesAppended: bytes + Data(("#" + String(repeating: "x", count: 31) + "\n").utf8)
            case .cutInHalf: bytes.prefix(bytes.count / 2)
            }
        }
    }

    /// Puts `damage` of the build in place of its copy, executable. Copied by `cp`, not written
    /// here: a file this process has open for writing is also open in a child another test spawns
    /// meanwhile, until that child execs, and exec of the file then fails (ETXTBSY).
    func damage(_ copy: String, of build: String, by damage: Damage, home: String) async throws {
        try damage.bytes(of: build).write(to: URL(fileURLWithPath: home + "/damaged"))
        let cp = try await run(#"cp "$HOME/damaged" "$0" && chmod 700 "$0""#, home: home, arguments: [copy])
        try #require(cp.exit.succeeded, "\(cp.stderr)")
    }

    /// A cached copy whose SHA-256 is not the build's is never run, not even with `--version`:
    /// it is removed, and the exit and its line say so, so that it is shipped again and said.
    @Test(arguments: Damage.allCases)
    func aCachedCopyThatIsNotThisBuildIsRemovedUnrunAndSaidSo(damage: Damage) async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            try await uploaded(shipment, home: home)
            let copy = copy(of: shipment, in: home)
            try await self.damage(copy, of: shipment.path, by: damage, home: home)
            let sha256 = try SSHShipment.of(copy).sha256
            let ran = try await run(try RemoteCommand.shipped(shipment, arguments: []), home: home)
            #expect(ran.exit.reason == .exited(125), "\(ran.exit): \(ran.stdout) \(ran.stderr)")
            #expect(ran.stderr == "skynet --ship: the copy \(copy) does not match this build: its SHA-256 is \(sha256)\n")
            #expect(ran.stdout.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: home + "/ran"), "the copy ran")
            #expect(!FileManager.default.fileExists(atPath: copy))
            let failure = classified(ran)
            #expect(failure.reason == "skynet --ship: the copy \(copy) does not match this build: its SHA-256 is \(sha256)")
            #expect(failure.kind == .copyMismatch && !failure.isPermanent)
        }
    }

    @Test func anIntactCopyWhoseLoaderFailsSaysSoWithTheLoadersLineAndIsNotShippedAgain() async throws {
        try await withHome { home in
            // A dynamically linked build on a host without its libraries.
            let path = home + "/build"
            try """
            #!/bin/sh
            echo "$0: error while loading shared libraries: libswiftCore.so: cannot open shared object file: No such file or directory" >&2
            exit 127
            """.write(toFile: path, atomically: true, encoding: .utf8)
            let shipment = try SSHShipment.of(path)
            try await uploaded(shipment, home: home)
            let copy = copy(of: shipment, in: home)
            let ran = try await run(try RemoteCommand.shipped(shipment, arguments: ["--job", "x=y"]), home: home)
            #expect(ran.exit.reason == .exited(123), "\(ran.exit): \(ran.stderr)")
            #expect(ran.stderr == "skynet --ship: this build does not run on this host: \(copy): error while loading shared libraries: libswiftCore.so: cannot open shared object file: No such file or directory\n")
            #expect(FileManager.default.fileExists(atPath: copy))
            let failure = classified(ran)
            #expect(failure.kind == .cannotShip && failure.isPermanent)
            #expect(failure.reason == ran.stderr.dropLast(1).description)
            #expect(failure.fix == "ship a static build: swift build -c release --static-swift-stdlib")
        }
    }

    @Test func anIntactCopyThatCannotBeExecutedSaysSoAndIsNotShippedAgain() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            try await uploaded(shipment, home: home)
            let copy = copy(of: shipment, in: home)
            // What a noexec home shows `test -x` (access(X_OK) fails there, whatever chmod
            // did); without the right to mount one: a copy without any x bit (so even to root)
            // and a chmod that changes nothing.
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: copy)
            let bin = try await noOpChmod(in: home)
            let ran = try await run(try RemoteCommand.shipped(shipment, arguments: []), home: home, path: bin + ":/usr/bin:/bin")
            #expect(ran.exit.reason == .exited(123), "\(ran.exit): \(ran.stderr)")
            #expect(ran.stderr == "skynet --ship: this build does not run on this host: the copy \(copy) is there but cannot be executed\n")
            #expect(FileManager.default.fileExists(atPath: copy))
            let failure = classified(ran)
            #expect(failure.kind == .cannotShip && failure.isPermanent)
            #expect(failure.fix == SSHFailure.noexecFix)
        }
    }

    /// A folder holding a `chmod` that exits 0 and changes nothing (written by `sh`, not here:
    /// see `damage`).
    func noOpChmod(in home: String) async throws -> String {
        let bin = home + "/bin"
        let made = try await run(##"mkdir -p "$0" && printf "%s\n" "#!/bin/sh" "exit 0" > "$0/chmod" && chmod 755 "$0/chmod""##,
                                 home: home, arguments: [bin])
        try #require(made.exit.succeeded, "\(made.stderr)")
        return bin
    }

    @Test func aCacheFolderThatCannotBeMadeIsAFailureForGoodInMkdirsWords() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            try "a file, not a folder".write(toFile: home + "/.cache", atomically: true, encoding: .utf8)
            let upload = try await run(RemoteCommand.upload(shipment), home: home, stdin: shipment.path)
            #expect(upload.exit.reason == .exited(124), "\(upload.exit): \(upload.stderr)")
            let mkdir = try #require(upload.stderr.split(separator: "\n").last.map(String.init))
            #expect(mkdir.hasPrefix("mkdir: ") && mkdir.contains("Not a directory"), "\(mkdir)")
            let failure = classified(upload)
            #expect(failure.kind == .cannotShip && failure.isPermanent)
            #expect(failure.reason == "skynet --ship: cannot keep the copy: \(mkdir)")
        }
    }

    /// Runs both commands of `--ship` (with an intact copy in the cache, the run would run it);
    /// returns what each said.
    func runAndUpload(_ shipment: SSHShipment, home: String) async throws -> (run: Run, upload: Run) {
        let ran = try await run(try RemoteCommand.shipped(shipment, arguments: []), home: home)
        let upload = try await run(RemoteCommand.upload(shipment), home: home, stdin: shipment.path)
        return (ran, upload)
    }

    /// The run and the upload command both exit 124 saying `line`: refused for good, with `fix`.
    func expectBothRefuse(_ shipment: SSHShipment, home: String, saying line: String, fix: String) async throws {
        let (ran, upload) = try await runAndUpload(shipment, home: home)
        for said in [ran, upload] {
            #expect(said.exit.reason == .exited(124), "\(said.exit): \(said.stderr)")
            #expect(said.stderr == line + "\n")
            let failure = classified(said)
            #expect(failure.kind == .cannotShip && failure.isPermanent)
            #expect(failure.reason == line)
            #expect(failure.fix == fix)
        }
    }

    /// `~/.cache/skynet` a symbolic link to another folder: neither command uses it,
    /// so that folder keeps its mode (it became 0700) and gets no copy; refused for good.
    @Test func aCacheFolderThatIsASymbolicLinkIsRefusedByBothCommandsAndItsTargetLeftAlone() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            try await uploaded(shipment, home: home)
            let cache = home + "/.cache/skynet", elsewhere = home + "/elsewhere"
            try FileManager.default.moveItem(atPath: cache, toPath: elsewhere)
            try FileManager.default.removeItem(atPath: elsewhere + "/skynet-" + shipment.sha256)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: elsewhere)
            try FileManager.default.createSymbolicLink(atPath: cache, withDestinationPath: elsewhere)
            let line = "skynet --ship: cannot keep the copy in \(cache): it is a symbolic link"
            try await expectBothRefuse(shipment, home: home, saying: line,
                                       fix: "--ship keeps its copy only in a folder of its own: remove the link ~/.cache/skynet on that host "
                                           + "(what it points to is left as it is)")
            #expect(try FileManager.default.attributesOfItem(atPath: elsewhere)[.posixPermissions] as? Int == 0o755)
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere) == [])
        }
    }

    /// `~/.cache/skynet` owned by another user: neither command uses it; refused for good.
    @Test(.enabled(if: geteuid() == 0, "needs root to give a folder to another user"))
    func aCacheFolderOwnedByAnotherUserIsRefusedByBothCommands() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            try await uploaded(shipment, home: home)
            let cache = home + "/.cache/skynet", nobody: uid_t = 65534
            try #require(chown(cache, nobody, gid_t(nobody)) == 0)
            let owner = try #require(getpwuid(nobody)).pointee.pw_name.map { String(cString: $0) } ?? "\(nobody)"
            let us = try #require(getpwuid(geteuid())).pointee.pw_name.map { String(cString: $0) } ?? ""
            let line = "skynet --ship: cannot keep the copy in \(cache): it is owned by \(owner), not by \(us)"
            try await expectBothRefuse(shipment, home: home, saying: line,
                                       fix: "--ship keeps its copy only in a folder the login owns: remove ~/.cache/skynet on that host, "
                                           + "or make the login's user its owner")
            #expect(try FileManager.default.attributesOfItem(atPath: cache)[.ownerAccountID] as? Int == Int(nobody))
            #expect(try FileManager.default.contentsOfDirectory(atPath: cache) == ["skynet-" + shipment.sha256])
        }
    }

    /// The session gone mid-copy (SIGHUP, SIGINT, SIGTERM to the upload's group): no partial
    /// file stays in the cache.
    @Test(arguments: [SIGHUP, SIGINT, SIGTERM])
    func anUploadKilledBySignalLeavesNoPartialFile(signal: Int32) async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            let (read, write) = try ChildProcess.makePipe()
            defer { closeFile(write) }
            var options = ChildProcess.Options(arguments: ["-c", RemoteCommand.upload(shipment)],
                                               environment: ["HOME": home, "PATH": "/usr/bin:/bin"])
            options.stdin = .descriptor(read)
            options.ownProcessGroup = true
            let child = try ChildProcess.spawn("/bin/sh", options)
            closeFile(read)
            let cache = home + "/.cache/skynet"
            func partial() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? []).filter { $0.hasPrefix(".skynet-") } }
            let started = ContinuousClock.now
            while partial().isEmpty, ContinuousClock.now - started < .seconds(10) { try await Task.sleep(for: .milliseconds(5)) }
            try #require(!partial().isEmpty, "the upload made no temporary file")
            // Signalled once `cat` copies: a signal that came before cat existed would be
            // handled only after cat's end, and this stdin never ends.
            func copying() -> Bool { HostProcesses.all().contains { $0.group == child.pid && $0.name == "cat" } }
            while !copying(), ContinuousClock.now - started < .seconds(10) { try await Task.sleep(for: .milliseconds(5)) }
            try #require(copying(), "no cat in the upload's group")
            child.signalGroup(signal)
            let exit = try await withTimeout(.seconds(10)) { await child.exit.value }
            #expect(!exit.succeeded)
            #expect(partial().isEmpty, "left after \(exit): \(partial())")
        }
    }

    /// The session gone after a partial copy: its error line meets a closed stderr (SIGPIPE).
    @Test func aCutUploadWhoseErrorLineMeetsAClosedStderrLeavesNoPartialFile() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            let part = home + "/part"
            try "#!/bin/sh\n".write(toFile: part, atomically: true, encoding: .utf8)
            let (read, write) = try ChildProcess.makePipe()
            closeFile(read)
            var options = ChildProcess.Options(arguments: ["-c", RemoteCommand.upload(shipment)],
                                               environment: ["HOME": home, "PATH": "/usr/bin:/bin"])
            options.stdin = .file(part)
            options.stderr = .descriptor(write)
            let child = try ChildProcess.spawn("/bin/sh", options)
            closeFile(write)
            let exit = try await withTimeout(.seconds(10)) { await child.exit.value }
            #expect(!exit.succeeded)
            #expect(try FileManager.default.contentsOfDirectory(atPath: home + "/.cache/skynet") == [], "after \(exit)")
        }
    }
}
