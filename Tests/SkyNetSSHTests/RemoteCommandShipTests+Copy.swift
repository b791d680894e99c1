import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetSSH
import Testing

/// What may be at the copy's name in `--ship`'s cache folder: the run command runs only the
/// login's own regular file there, in a folder no one else can change between its checks and
/// its exec; the upload puts its file at that name, never into what is there. The remote
/// commands run by a real `/bin/sh` with a HOME of the test's own.
extension RemoteCommandShipTests {
    /// The mode bits (permissions, sticky, set-id) of `path` itself, nil when nothing is there.
    func mode(of path: String) -> mode_t? {
        var stats = stat()
        return lstat(path, &stats) == 0 ? stats.st_mode & 0o7777 : nil
    }

    func isSymbolicLink(_ path: String) -> Bool {
        var stats = stat()
        return lstat(path, &stats) == 0 && stats.st_mode & S_IFMT == S_IFLNK
    }

    /// Copies `source` to `destination`, executable (by `sh`, not here: see `damage`).
    func copyExecutable(_ source: String, to destination: String, home: String) async throws {
        let cp = try await run(#"mkdir -p "${1%/*}" && cp "$0" "$1" && chmod 700 "$1""#, home: home, arguments: [source, destination])
        try #require(cp.exit.succeeded, "\(cp.stderr)")
    }

    /// The run command `run` removed the copy unrun, saying `line`, to ship it again.
    func expectRemovedUnrun(_ ran: Run, copy: String, saying line: String) {
        #expect(ran.exit.reason == .exited(125), "\(ran.exit): \(ran.stdout) \(ran.stderr)")
        #expect(ran.stderr == line + "\n")
        #expect(ran.stdout.isEmpty, "the copy ran")
        #expect(mode(of: copy) == nil, "the copy is still there")
        let failure = classified(ran)
        #expect(failure.kind == .copyMismatch && !failure.isPermanent)
        #expect(failure.reason == line)
    }

    /// A cache folder others may write to (0777, sticky or not): the run command makes it 0700
    /// before it looks at the copy, so no one else can put another file at the copy's name
    /// between the checks and the exec.
    @Test(arguments: [0o777, 0o1777] as [mode_t])
    func aCacheFolderOthersMayWriteToIsMadePrivateBeforeTheCopyIsRun(folderMode: mode_t) async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            try await uploaded(shipment, home: home)
            let cache = home + "/.cache/skynet"
            try #require(chmod(cache, folderMode) == 0)
            let ran = try await run(try RemoteCommand.shipped(shipment, arguments: []), home: home)
            #expect(ran.exit.succeeded, "\(ran.exit): \(ran.stderr)")
            #expect(ran.stdout == "node\n--stdio\n")
            #expect(mode(of: cache) == 0o700)
        }
    }

    /// The copy's name a symbolic link to a correct copy elsewhere (another user's, in the
    /// attack: theirs to replace once its hash is checked): removed unrun, what it points to
    /// left as it is, the folder made 0700, and shipped again, said with the reason.
    @Test func aCopyThatIsASymbolicLinkIsRemovedUnrunAndShippedAgain() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            try await uploaded(shipment, home: home)
            let cache = home + "/.cache/skynet", copy = copy(of: shipment, in: home), theirs = home + "/theirs/skynet"
            try await copyExecutable(shipment.path, to: theirs, home: home)
            try FileManager.default.removeItem(atPath: copy)
            try FileManager.default.createSymbolicLink(atPath: copy, withDestinationPath: theirs)
            try #require(chmod(cache, 0o777) == 0)
            let ran = try await run(try RemoteCommand.shipped(shipment, arguments: []), home: home)
            expectRemovedUnrun(ran, copy: copy, saying: "skynet --ship: the copy \(copy) is a symbolic link")
            #expect(try SSHShipment.of(theirs).sha256 == shipment.sha256)
            #expect(mode(of: cache) == 0o700)
            try await uploaded(shipment, home: home)
            #expect(!isSymbolicLink(copy))
            #expect(try await run(try RemoteCommand.shipped(shipment, arguments: []), home: home).exit.succeeded)
        }
    }

    /// The copy's name a file that is not a regular file (a FIFO here): removed, shipped again.
    @Test func aCopyThatIsNoRegularFileIsRemovedAndShippedAgain() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            try await uploaded(shipment, home: home)
            let copy = copy(of: shipment, in: home)
            try FileManager.default.removeItem(atPath: copy)
            try #require(mkfifo(copy, 0o700) == 0)
            let ran = try await run(try RemoteCommand.shipped(shipment, arguments: []), home: home)
            expectRemovedUnrun(ran, copy: copy, saying: "skynet --ship: the copy \(copy) is not a regular file")
        }
    }

    /// A correct copy that another user owns (the folder is the login's): theirs to change, so
    /// removed unrun and shipped again.
    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to another user"))
    func aCopyOwnedByAnotherUserIsRemovedUnrunAndShippedAgain() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            try await uploaded(shipment, home: home)
            let copy = copy(of: shipment, in: home), nobody: uid_t = 65534
            try #require(chown(copy, nobody, gid_t(nobody)) == 0)
            let owner = try #require(getpwuid(nobody)).pointee.pw_name.map { String(cString: $0) } ?? "\(nobody)"
            let us = try #require(getpwuid(geteuid())).pointee.pw_name.map { String(cString: $0) } ?? ""
            let ran = try await run(try RemoteCommand.shipped(shipment, arguments: []), home: home)
            expectRemovedUnrun(ran, copy: copy, saying: "skynet --ship: the copy \(copy) is owned by \(owner), not by \(us)")
        }
    }

    /// A directory at the copy's name: both commands refuse it (the upload once moved its file
    /// into it), left as it is; for good, with what to do.
    @Test func aDirectoryAtTheCopysNameIsRefusedByBothCommandsAndLeftAlone() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            let copy = copy(of: shipment, in: home)
            try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
            try "kept".write(toFile: copy + "/kept", atomically: true, encoding: .utf8)
            try await expectBothRefuse(shipment, home: home, saying: "skynet --ship: cannot keep the copy as \(copy): it is a directory",
                                       fix: "--ship keeps its copy as a file: remove that directory on that host")
            #expect(try FileManager.default.contentsOfDirectory(atPath: copy) == ["kept"])
        }
    }

    /// A symbolic link at the copy's name, to a folder or to a file: the upload replaces the
    /// link with the copy, and puts nothing into (or over) what it pointed to.
    @Test(arguments: [true, false])
    func anUploadReplacesASymbolicLinkAtTheCopysNameAndLeavesItsTargetAlone(toAFolder: Bool) async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            let copy = copy(of: shipment, in: home), target = home + "/elsewhere"
            if toAFolder {
                try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
            } else {
                try "theirs".write(toFile: target, atomically: true, encoding: .utf8)
            }
            try FileManager.default.createDirectory(atPath: home + "/.cache/skynet", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: copy, withDestinationPath: target)
            try await uploaded(shipment, home: home)
            #expect(!isSymbolicLink(copy))
            #expect(try SSHShipment.of(copy).sha256 == shipment.sha256)
            #expect(mode(of: copy) == 0o700)
            if toAFolder {
                #expect(try FileManager.default.contentsOfDirectory(atPath: target) == [])
            } else {
                #expect(try String(contentsOfFile: target, encoding: .utf8) == "theirs")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: home + "/.cache/skynet") == ["skynet-\(shipment.sha256)"])
        }
    }

    /// A correct copy that lost its execute bit (0600): the login's own verified copy is made
    /// executable and run, not taken for a noexec home.
    @Test func anIntactCopyWithoutItsExecuteBitIsMadeExecutableAndRun() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            try await uploaded(shipment, home: home)
            let copy = copy(of: shipment, in: home)
            try #require(chmod(copy, 0o600) == 0)
            let ran = try await run(try RemoteCommand.shipped(shipment, arguments: ["--job", "x=y"]), home: home)
            #expect(ran.exit.succeeded, "\(ran.exit): \(ran.stderr)")
            #expect(ran.stdout.hasPrefix("node\n--stdio\n--stdio-args\n"))
            #expect(mode(of: copy) == 0o700)
        }
    }
}
