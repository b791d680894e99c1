import Foundation
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// Task ids made from one random base and a counter: distinct, and random UUIDs by their
/// version and variant bits. (That two processes draw different bases cannot be seen from
/// inside one process.)
@Suite(.timeLimit(.minutes(3)))
struct TaskIDTests {
    /// The 128 bits of an id, as one number to sort.
    func bits(_ id: UUID) -> UInt128 {
        withUnsafeBytes(of: id.uuid) { bytes in
            UInt128(UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))) << 64
                | UInt128(UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }

    /// Counts repeats in `ids`, and ids that are not version 4 with the RFC 4122 variant (the
    /// high nibble of byte 6, the top two bits of byte 8).
    func check(_ ids: [UInt128]) -> (repeats: Int, version: Int, variant: Int) {
        (ids.count - Set(ids).count,
         ids.filter { ($0 >> 76) & 0xF != 4 }.count,
         ids.filter { ($0 >> 62) & 0b11 != 0b10 }.count)
    }

    @Test func aMillionIdsAreDistinctAndEachIsARandomUUID() async throws {
        // Under the sanitizer a million ids take seconds, and its resets of shadow memory stop
        // every thread meanwhile: a tenth of them is checked.
        let count = underThreadSanitizer ? 100_000 : 1_000_000
        // Sixteen megabytes of ids: measured alone, so that no other test's peak is spoiled;
        // on one thread of its own, so that the pool stays free for the tests beside it.
        try await MemoryUse.measuring {
            let (repeats, version, variant) = try await onOwnThread(named: "test-task-ids") {
                check((0..<count).map { _ in bits(TaskID.next()) })
            }
            #expect(repeats == 0)
            #expect(version == 0, "\(version) ids without version 4")
            #expect(variant == 0, "\(variant) ids without the RFC 4122 variant")
        }
    }

    @Test func idsMadeOnFourThreadsAtOnceAreDistinct() async throws {
        let ids = try await withThrowingTaskGroup(of: [UInt128].self) { group in
            for _ in 0..<4 {
                group.addTask { try await onOwnThread(named: "test-task-ids") { (0..<50_000).map { _ in bits(TaskID.next()) } } }
            }
            return try await group.reduce(into: [UInt128]()) { $0 += $1 }
        }
        #expect(check(ids) == (0, 0, 0))
        // One random base for the process: ids differ in their counter half only. (Ids drawn
        // at random each, as `UUID()` draws them, would pass the check above but not this.)
        #expect(Set(ids.map { $0 >> 64 }).count == 1)
    }

    @Test func aTaskGetsAFreshRandomUUIDByDefault() {
        let first = ScanTask(input: 1), second = ScanTask(input: 1)
        #expect(first.id != second.id)
        for id in [first.id, second.id] {
            #expect(id.uuid.6 >> 4 == 4)
            #expect(id.uuid.8 >> 6 == 0b10)
            // The text form says so too: xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx.
            let text = id.uuidString.lowercased()
            #expect(Array(text)[14] == "4")
            #expect("89ab".contains(Array(text)[19]))
        }
    }
}
