import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransfer
import Testing

/// A node's work root: private, locked for the process's life, one directory per connection,
/// and the leftovers of killed nodes swept by the next start, never a live node's.
@Suite(.timeLimit(.minutes(1)))
struct WorkRootTests {
    /// Whether a new open of `path` can take its `flock` (then let go at once).
    private func lockIsFree(_ path: String) -> Bool {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) == 0
    }

    /// A root as a killed node leaves it: lock file present, nobody holding it, files inside.
    private func leaveDeadRoot(_ sandbox: WorkDirSandbox, _ name: String) throws {
        try sandbox.write("\(name)/.lock", [])
        try sandbox.write("\(name)/conn-1/task-0-1/photos/a.jpg", [1, 2, 3])
    }

    @Test func aRootIsPrivateNamedForThePidAndLockedWhileItLives() async throws {
        try await WorkDirSandbox.with { sandbox in
            let root = try WorkRoot.make(in: sandbox.path)
            #expect(root.name.hasPrefix("skynet-node-\(getpid())-"))
            #expect(root.name.count == "skynet-node-\(getpid())-".count + 6)
            #expect(root.path == sandbox.at(root.name))
            let stats = try #require(sandbox.status(root.name))
            #expect(stats.st_mode & 0o777 == 0o700)
            #expect(stats.st_mode & S_IFMT == S_IFDIR)
            #expect(!lockIsFree(root.path + "/.lock"), "the lock is held while the root lives")
            root.remove()
            #expect(!sandbox.exists(root.name))
            #expect(!root.isHeld)
            root.remove()  // twice: nothing happens
        }
    }

    @Test func twoRootsOfOneParentAreDistinct() async throws {
        try await WorkDirSandbox.with { sandbox in
            let first = try WorkRoot.make(in: sandbox.path), second = try WorkRoot.make(in: sandbox.path)
            #expect(first.path != second.path)
            #expect(sandbox.tree().keys.filter { !$0.contains("/") }.sorted() == [first.name, second.name].sorted())
            first.remove()
            #expect(sandbox.exists(second.name))
            second.remove()
        }
    }

    @Test func connectionDirectoriesCountFromOneAndGoOneByOne() async throws {
        try await WorkDirSandbox.with { sandbox in
            let root = try WorkRoot.make(in: sandbox.path)
            defer { root.remove() }
            let first = try root.openConnection(), second = try root.openConnection()
            #expect([first.name, second.name] == ["conn-1", "conn-2"])
            #expect(first.path == root.path + "/conn-1")
            try sandbox.write("\(root.name)/conn-1/task-3-1/a.txt", [7])
            try sandbox.write("\(root.name)/conn-2/task-3-1/a.txt", [8])
            first.remove()
            #expect(!sandbox.exists("\(root.name)/conn-1"))
            #expect(sandbox.read("\(root.name)/conn-2/task-3-1/a.txt") == [8])
            #expect(try root.openConnection().name == "conn-3", "numbers are never reused in a process")
        }
    }

    @Test func removingAConnectionNeverFollowsALinkItsJobPlanted() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("outside/precious.txt", [42])
            let root = try WorkRoot.make(in: sandbox.path)
            defer { root.remove() }
            let connection = try root.openConnection()
            // What `ln -s ../../outside x` and `ln -s /…/outside y` in a task dir would leave.
            try sandbox.symlink("\(root.name)/conn-1/task-0-1/x", to: "../../../outside")
            try sandbox.symlink("\(root.name)/conn-1/task-0-1/y", to: sandbox.at("outside"))
            let before = sandbox.tree("outside")
            connection.remove()
            #expect(!sandbox.exists("\(root.name)/conn-1"))
            #expect(sandbox.tree("outside") == before)
            #expect(sandbox.read("outside/precious.txt") == [42])
        }
    }

    @Test func theSweepRemovesADeadNodesRootAndNothingElse() async throws {
        try await WorkDirSandbox.with { sandbox in
            let live = try WorkRoot.make(in: sandbox.path)
            defer { live.remove() }
            try leaveDeadRoot(sandbox, "skynet-node-99999-dead01")
            try sandbox.write("outside/precious.txt", [42])
            try sandbox.symlink("skynet-node-99999-dead01/conn-1/link", to: sandbox.at("outside"))
            // Not a root: another name, and a link named like a root.
            try sandbox.write("other-node-1-abcdef/.lock", [])
            try sandbox.symlink("skynet-node-1-linked", to: sandbox.at("outside"))
            try sandbox.write("skynet-node-2-file", [1])
            let removed = WorkRoot.sweep(in: sandbox.path)
            #expect(removed == ["skynet-node-99999-dead01"])
            #expect(!sandbox.exists("skynet-node-99999-dead01"))
            #expect(sandbox.exists(live.name) && live.isHeld, "a live root is never swept")
            #expect(sandbox.exists("other-node-1-abcdef/.lock"))
            #expect(sandbox.status("skynet-node-1-linked").map { $0.st_mode & S_IFMT == S_IFLNK } == true)
            #expect(sandbox.read("skynet-node-2-file") == [1])
            #expect(sandbox.read("outside/precious.txt") == [42])
        }
    }

    @Test func aRootWhoseLockIsHeldElsewhereIsLeftAlone() async throws {
        try await WorkDirSandbox.with { sandbox in
            try leaveDeadRoot(sandbox, "skynet-node-4242-alive1")
            // Another node's lock: an open file description of its own holding the flock.
            let fd = open(sandbox.at("skynet-node-4242-alive1/.lock"), O_RDWR | O_CLOEXEC)
            try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
            #expect(WorkRoot.sweep(in: sandbox.path).isEmpty)
            #expect(sandbox.read("skynet-node-4242-alive1/conn-1/task-0-1/photos/a.jpg") == [1, 2, 3])
            close(fd)  // that node ends without cleaning up
            #expect(WorkRoot.sweep(in: sandbox.path) == ["skynet-node-4242-alive1"])
            #expect(!sandbox.exists("skynet-node-4242-alive1"))
        }
    }

    /// The parent is a shared place (/tmp): a user's own directory that only looks like a root —
    /// the prefix with other words, a root's shape without a lock file, a lock that is a link —
    /// is never removed, however old and unlocked.
    @Test func aDirectoryThatIsNotExactlyADeadRootIsNeverSwept() async throws {
        try await WorkDirSandbox.with { sandbox in
            let lookalikes = ["skynet-node-notes", "skynet-node-exporter", "skynet-node-7-nolock",
                              "skynet-node-12-abcdefg", "skynet-node-x1-abcdef", "skynet-node--abcdef"]
            for name in lookalikes { try sandbox.write("\(name)/src/main.go", [7]) }
            for name in ["skynet-node-notes", "skynet-node-12-abcdefg", "skynet-node-x1-abcdef", "skynet-node--abcdef"] {
                try sandbox.write("\(name)/.lock", [])  // a lock file nobody holds
            }
            try sandbox.write("skynet-node-8-linked/x", [1])
            try sandbox.write("lockfile", [])
            try sandbox.symlink("skynet-node-8-linked/.lock", to: sandbox.at("lockfile"))
            var old = [timespec(tv_sec: time(nil) - 86_400, tv_nsec: 0), timespec(tv_sec: time(nil) - 86_400, tv_nsec: 0)]
            for name in lookalikes + ["skynet-node-8-linked"] { #expect(utimensat(AT_FDCWD, sandbox.at(name), &old, 0) == 0) }
            #expect(WorkRoot.sweep(in: sandbox.path).isEmpty)
            for name in lookalikes { #expect(sandbox.read("\(name)/src/main.go") == [7], "\(name)") }
            #expect(sandbox.read("skynet-node-8-linked/x") == [1])
        }
    }

    @Test(arguments: [("skynet-node-4242-a1B2c3", true), ("skynet-node-1-abcdef", true), ("skynet-node-notes", false),
                      ("skynet-node-1-abcde", false), ("skynet-node-1-abcde_", false), ("skynet-node-12345678901-abcdef", false),
                      ("skynet-node-1-abcdef-x", false), ("skynet-node-1abcdef", false), ("xskynet-node-1-abcdef", false)])
    func aRootsNameIsExactlyWhatMakeGives(name: String, isRoot: Bool) {
        #expect(WorkRoot.isRootName(name) == isRoot)
    }

    @Test func aRootThatCannotBeMadeIsAFileError() async throws {
        try await WorkDirSandbox.with { sandbox in
            #expect(throws: FileError.self) { try WorkRoot.make(in: sandbox.at("missing")) }
            #expect(sandbox.tree().isEmpty)
        }
    }
}
