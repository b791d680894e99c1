import Foundation
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetWork
import Testing

/// A node's files: its root made at the first file and gone when it stops, leftovers of a
/// killed node swept at its start, uploads counted against its capacity, and its free space
/// read through the probe its options give.
@Suite(.timeLimit(.minutes(1)))
struct NodeFilesTests {
    /// A node with a job besides the built-in scan (a node of the scan only takes no files).
    private func options(_ sandbox: WorkDirSandbox, name: String = "node-x") throws -> Node.Options {
        var options = NodeHarness().options()
        options.name = name
        options.workDir = sandbox.path
        try options.jobs.register("upper") { $0.input.uppercased() }
        return options
    }

    /// The names of the roots in the sandbox.
    private func roots(_ sandbox: WorkDirSandbox) -> [String] {
        sandbox.tree().keys.filter { !$0.contains("/") && $0.hasPrefix(WorkRoot.prefix) }.sorted()
    }

    @Test func theRootIsMadeAtTheFirstFileOnlyAndRemovedWhenTheNodeStops() async throws {
        try await WorkDirSandbox.with { sandbox in
            let node = try await Node.start(try options(sandbox))
            _ = try await withTimeout(.seconds(10)) { await node.files.swept.value }
            #expect(roots(sandbox).isEmpty, "no file yet, no root")
            let root = try node.files.root()
            #expect(try node.files.root() === root, "one root per node")
            #expect(roots(sandbox) == [root.name])
            try sandbox.write("\(root.name)/conn-1/task-0-1/a", [1])
            await node.stop(grace: .zero)
            #expect(roots(sandbox).isEmpty)
            #expect(!node.files.hasRoot)
            #expect(throws: FileError.self) { try node.files.root() }
            #expect(roots(sandbox).isEmpty, "a stopped node makes no root again")
        }
    }

    @Test func aStartingNodeSweepsWhatAKilledNodeLeftAndNothingLive() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("skynet-node-99999-killed/.lock", [])
            try sandbox.write("skynet-node-99999-killed/conn-2/task-5-1/big.bin", [1, 2])
            let live = try WorkRoot.make(in: sandbox.path)
            defer { live.remove() }
            let node = try await Node.start(try options(sandbox))
            let swept = try await withTimeout(.seconds(10)) { await node.files.swept.value }
            await node.stop(grace: .zero)
            #expect(swept == ["skynet-node-99999-killed"])
            #expect(roots(sandbox) == [live.name])
        }
    }

    @Test func aNodeWithoutFilesSweepsNothing() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("skynet-node-99999-killed/.lock", [])
            var options = try options(sandbox)
            options.acceptsFiles = false
            let node = try await Node.start(options)
            await node.stop(grace: .zero)
            #expect(node.files.swept.current == nil)
            #expect(roots(sandbox) == ["skynet-node-99999-killed"])
        }
    }

    @Test func aNodeOfTheBuiltInScanOnlyTakesNoFilesAndSweepsNothing() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("skynet-node-99999-killed/.lock", [])
            var options = NodeHarness().options()
            options.workDir = sandbox.path
            try await NodeHarness().withNode(options) { node in
                #expect(!node.offersFiles)
                #expect(node.files.swept.current == nil)
            }
            #expect(roots(sandbox) == ["skynet-node-99999-killed"])
            try await NodeHarness().withNode(try self.options(sandbox)) { node in
                #expect(node.offersFiles)
                _ = try await withTimeout(.seconds(10)) { await node.files.swept.value }
            }
            #expect(roots(sandbox).isEmpty)
        }
    }

    @Test func uploadsTakePlacesOfTheCapacityInOneStep() {
        let files = NodeFiles(node: "n", parent: nil) { _ in 0 }
        #expect(files.takeUploadPlace(running: 2, capacity: 4))
        #expect(files.takeUploadPlace(running: 2, capacity: 4))
        #expect(!files.takeUploadPlace(running: 2, capacity: 4), "2 running + 2 uploads fill 4")
        #expect(!files.takeUploadPlace(running: 0, capacity: 2))
        files.giveBackUploadPlace()
        #expect(files.uploads == 1)
        #expect(files.takeUploadPlace(running: 2, capacity: 4))
        files.giveBackUploadPlace()
        files.giveBackUploadPlace()
        files.giveBackUploadPlace()  // one too many: never below zero
        #expect(files.uploads == 0)
    }

    @Test func concurrentUploadsNeverTakeMoreThanTheCapacity() async {
        let files = NodeFiles(node: "n", parent: nil) { _ in 0 }
        let taken = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<32 {
                group.addTask { if files.takeUploadPlace(running: 1, capacity: 8) { taken.withLock { $0 += 1 } } }
            }
        }
        #expect(taken.withLock { $0 } == 7)
    }

    @Test func theFreeSpaceIsWhatTheOptionsProbeSaysOfTheRoot() async throws {
        try await WorkDirSandbox.with { sandbox in
            var options = try options(sandbox)
            let probed = Locked<[String]>([])
            options.freeSpace = { root in
                probed.withLock { $0.append(root.path) }
                return 12 << 20
            }
            try await NodeHarness().withNode(options) { node in
                let root = try node.files.root()
                #expect(throws: ScanFailure(code: .noSpace, message: "no space on node-x: 12 MiB free, 40 MiB needed")) {
                    try node.files.space.reserve(40 << 20)
                }
                #expect(probed.withLock { $0 } == [root.path])
                try node.files.space.reserve(12 << 20).release()
            }
        }
    }
}
