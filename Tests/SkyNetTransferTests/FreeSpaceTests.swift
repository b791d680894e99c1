import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetWork
import Testing

/// A node's free space for uploads: reservations against what the file system says is free,
/// never promising the same bytes twice, and the message a coordinator shows.
@Suite(.timeLimit(.minutes(1)))
struct FreeSpaceTests {
    static let mebibyte: Int64 = 1 << 20

    /// A probe whose answer the test sets.
    final class Disk: Sendable {
        let free: Locked<Int64>
        init(free: Int64) { self.free = Locked(free) }
        var probe: @Sendable () throws -> Int64 { { [free] in free.withLock { $0 } } }
    }

    @Test func theMessageRoundsFreeDownAndNeededUp() {
        #expect(FreeSpace.message(node: "gpu1", free: 12 * Self.mebibyte + 1023 * 1024, needed: 39 * Self.mebibyte + 1)
                == "no space on gpu1: 12 MiB free, 40 MiB needed")
        #expect(FreeSpace.message(node: "n", free: 40 * Self.mebibyte, needed: 40 * Self.mebibyte)
                == "no space on n: 40 MiB free, 40 MiB needed")
        #expect(FreeSpace.message(node: "n", free: -5, needed: 1) == "no space on n: 0 MiB free, 1 MiB needed")
    }

    @Test func anUploadLargerThanTheFreeSpaceIsRefusedWithTheNumbers() throws {
        let disk = Disk(free: 12 * Self.mebibyte + 300_000)
        let space = FreeSpace(node: "node-x", probe: disk.probe)
        #expect(throws: ScanFailure(code: .noSpace, message: "no space on node-x: 12 MiB free, 40 MiB needed")) {
            try space.reserve(40 * Self.mebibyte)
        }
        #expect(space.reservedBytes == 0, "a refusal reserves nothing")
        let fits = try space.reserve(12 * Self.mebibyte)
        #expect(space.reservedBytes == 12 * Self.mebibyte)
        fits.release()
    }

    @Test func reservationsInFlightCountAgainstTheFreeSpace() throws {
        let disk = Disk(free: 100 * Self.mebibyte)
        let space = FreeSpace(node: "gpu1", probe: disk.probe)
        let first = try space.reserve(60 * Self.mebibyte)
        #expect(throws: ScanFailure(code: .noSpace, message: "no space on gpu1: 40 MiB free, 50 MiB needed")) {
            try space.reserve(50 * Self.mebibyte)
        }
        first.release()
        first.release()  // twice gives back nothing more
        #expect(space.reservedBytes == 0)
        let second = try space.reserve(50 * Self.mebibyte)
        #expect(space.reservedBytes == 50 * Self.mebibyte)
        second.release()
    }

    @Test func writtenBytesMoveFromTheReservationToTheDisk() throws {
        let disk = Disk(free: 100 * Self.mebibyte)
        let space = FreeSpace(node: "gpu1", probe: disk.probe)
        let upload = try space.reserve(80 * Self.mebibyte)
        // 30 MiB land on the disk: the file system counts them, the reservation no longer does.
        disk.free.withLock { $0 -= 30 * Self.mebibyte }
        upload.wrote(30 * Self.mebibyte)
        #expect(space.reservedBytes == 50 * Self.mebibyte)
        // Without that hand-over this would see 70 - 80 < 0 MiB and refuse.
        let more = try space.reserve(20 * Self.mebibyte)
        upload.wrote(200 * Self.mebibyte)  // more than reserved: never below zero
        #expect(space.reservedBytes == 20 * Self.mebibyte)
        upload.release()
        more.release()
        #expect(space.reservedBytes == 0)
    }

    @Test func aDroppedReservationGivesItsBytesBack() throws {
        let space = FreeSpace(node: "gpu1", probe: Disk(free: 10 * Self.mebibyte).probe)
        do { _ = try space.reserve(10 * Self.mebibyte) }
        #expect(space.reservedBytes == 0)
    }

    @Test func concurrentUploadsNeverReserveMoreThanIsFree() async throws {
        let space = FreeSpace(node: "gpu1", probe: Disk(free: 35 * Self.mebibyte).probe)
        let granted = Locked<[FreeSpace.Reservation]>([])
        let refused = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    do {
                        let reservation = try space.reserve(10 * Self.mebibyte)
                        granted.withLock { $0.append(reservation) }
                    } catch {
                        refused.withLock { $0 += 1 }
                    }
                }
            }
        }
        #expect(granted.withLock { $0.count } == 3)
        #expect(refused.withLock { $0 } == 13)
        #expect(space.reservedBytes == 30 * Self.mebibyte)
        granted.withLock { $0.forEach { $0.release() } }
    }

    @Test func aProbeThatFailsIsANoSpaceFailure() {
        struct Broken: Error, CustomStringConvertible { var description: String { "fstatvfs: Input/output error" } }
        let space = FreeSpace(node: "gpu1", probe: { throw Broken() })
        #expect(throws: ScanFailure(code: .noSpace, message: "cannot tell the free space on gpu1: fstatvfs: Input/output error")) {
            try space.reserve(1)
        }
    }

    @Test func aWriteThatMetENOSPCSaysTheNumbersOfThatMoment() throws {
        let disk = Disk(free: 3 * Self.mebibyte)
        let space = FreeSpace(node: "gpu1", probe: disk.probe)
        let other = try space.reserve(Self.mebibyte)
        #expect(space.failure(needed: 5 * Self.mebibyte) == ScanFailure(code: .noSpace, message: "no space on gpu1: 2 MiB free, 5 MiB needed"))
        other.release()
    }

    @Test func theRealProbeReadsTheFileSystemOfTheRoot() async throws {
        try await WorkDirSandbox.with { sandbox in
            let root = try WorkRoot.make(in: sandbox.path)
            defer { root.remove() }
            var stats = statvfs()
            try #require(statvfs(sandbox.path, &stats) == 0)
            let expected = Int64(stats.f_bavail) * Int64(stats.f_frsize)
            let measured = try root.handle.freeBytes()
            // Other processes write meanwhile: equal within 64 MiB.
            #expect(abs(measured - expected) < 64 * Self.mebibyte)
        }
    }
}
