import Foundation
import SkyNetLocalHosts
import SkyNetTestSupport
import Testing

/// Which `parallel` counts as GNU parallel: the first on PATH, when its `--version` says so.
@Suite(.timeLimit(.minutes(1)))
struct GNUParallelLookupTests {
    @Test func theFirstParallelOnPathIsFoundWhenItsVersionSaysGNUParallel() async throws {
        try await withFolders { gnu, other in
            try await script("echo 'GNU parallel 20221122'", at: gnu + "/parallel")
            try await script("exit 1", at: other + "/parallel")
            #expect(await GNUParallel.lookUp(searchPath: "\(gnu):\(other)") == .found(path: gnu + "/parallel"))
        }
    }

    @Test func aParallelThatIsNotGNUsIsUnavailableEvenWithGNUParallelLaterOnPath() async throws {
        try await withFolders { moreutils, gnu in
            // moreutils' parallel refuses `--version` with its usage.
            try await script("echo \"parallel: unrecognized option '$1'\" >&2; exit 1", at: moreutils + "/parallel")
            try await script("echo 'GNU parallel 20221122'", at: gnu + "/parallel")
            let lookup = await GNUParallel.lookUp(searchPath: "\(moreutils):\(gnu)")
            #expect(lookup.path == nil)
            #expect(lookup.unavailableReason == "\(moreutils)/parallel is not GNU parallel (moreutils has a program of that name): "
                    + "apt-get install parallel")
        }
    }

    @Test func noParallelOnPathIsUnavailableWithThePackageToInstall() async throws {
        try await withFolders { empty, _ in
            #expect(await GNUParallel.lookUp(searchPath: empty) == .unavailable(reason: "GNU parallel is not on PATH: apt-get install parallel"))
        }
    }

    func withFolders(_ body: (String, String) async throws -> Void) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-parallel-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for name in ["a", "b"] { try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: true) }
        try await body(root + "/a", root + "/b")
    }

    /// Copied into place by `cp` (`installScript`): a script written here would be open in any
    /// child another test spawns meanwhile, and its exec would fail (ETXTBSY).
    func script(_ body: String, at path: String) async throws {
        _ = try await ProcessTests.SSHOptionTests.installScript("#!/bin/sh\n\(body)\n", at: path)
    }
}
