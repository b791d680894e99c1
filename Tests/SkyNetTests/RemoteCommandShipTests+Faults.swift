import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNetCluster
@testable import SkyNetRuntime

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

    @Test func aDamagedCachedCopyIsRemovedSoThatItIsShippedAgain() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            try await uploaded(shipment, home: home)
            let copy = copy(of: shipment, in: home)
            // A truncated ELF file: the kernel refuses it (Exec format error).
            try Data([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]).write(to: URL(fileURLWithPath: copy))
            let ran = try await run(try RemoteCommand.shipped(shipment, arguments: []), home: home)
            #expect(ran.exit.reason == .exited(121), "\(ran.exit): \(ran.stderr)")
            #expect(ran.stdout.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: copy))
            #expect(classified(ran).kind == .needsShipment)
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
            // What a noexec home shows `test -x` (access(X_OK) fails there); without the
            // right to mount one, a copy without any x bit shows the same, even to root.
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: copy)
            let ran = try await run(try RemoteCommand.shipped(shipment, arguments: []), home: home)
            #expect(ran.exit.reason == .exited(123), "\(ran.exit): \(ran.stderr)")
            #expect(ran.stderr == "skynet --ship: this build does not run on this host: the copy \(copy) is there but cannot be executed\n")
            #expect(FileManager.default.fileExists(atPath: copy))
            let failure = classified(ran)
            #expect(failure.kind == .cannotShip && failure.isPermanent)
            #expect(failure.fix == SSHFailure.noexecFix)
        }
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
