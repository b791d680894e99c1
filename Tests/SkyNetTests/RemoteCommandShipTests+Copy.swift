import Foundation
import Testing
@testable import SkyNetCluster
@testable import SkyNetRuntime

/// What may be at the copy's name in `--ship`'s cache folder: the upload puts its file at that
/// name, never into what is there. The remote commands run by a real `/bin/sh` with a HOME of
/// the test's own.
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
}
