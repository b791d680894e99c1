import Foundation
import Testing
@testable import SkyNet

/// Task ids made from one random base and a counter: distinct, and random UUIDs by their
/// version and variant bits. (That two processes draw different bases cannot be seen from
/// inside one process.)
@Suite(.timeLimit(.minutes(1)))
struct TaskIDTests {
    /// The 128 bits of an id, as one number to sort.
    func bits(_ id: UUID) -> UInt128 {
        withUnsafeBytes(of: id.uuid) { bytes in bytes.reduce(UInt128(0)) { $0 << 8 | UInt128($1) } }
    }

    @Test func aMillionIdsMadeByFourThreadsAtOnceAreDistinctAndEachIsARandomUUID() async throws {
        // Sixteen megabytes of ids: measured alone, so that no other test's peak is spoiled.
        try await MemoryUse.measuring {
            // On threads of their own: seconds of work that would otherwise hold the pool's
            // threads away from the tests running beside this one.
            let perThread = 250_000
            let ids = try await withThrowingTaskGroup(of: [UInt128].self) { group in
                for _ in 0..<4 {
                    group.addTask { try await onOwnThread(named: "test-task-ids") { (0..<perThread).map { _ in bits(TaskID.next()) } } }
                }
                return try await group.reduce(into: [UInt128]()) { $0 += $1 }
            }
            #expect(ids.count == 4 * perThread)
            let (repeats, version, variant) = try await onOwnThread(named: "test-task-ids") {
                let sorted = ids.sorted()
                return (zip(sorted, sorted.dropFirst()).filter { $0 == $1 }.count,
                        // Version 4 (the high nibble of byte 6), the RFC 4122 variant (10 atop byte 8).
                        ids.filter { ($0 >> 76) & 0xF != 4 }.count,
                        ids.filter { ($0 >> 62) & 0b11 != 0b10 }.count)
            }
            #expect(repeats == 0)
            #expect(version == 0, "\(version) ids without version 4")
            #expect(variant == 0, "\(variant) ids without the RFC 4122 variant")
        }
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
