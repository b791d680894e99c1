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

    @Test func aMillionIdsMadeByFourTasksAtOnceAreDistinctAndEachIsARandomUUID() async throws {
        // Sixteen megabytes of ids: measured alone, so that no other test's peak is spoiled.
        try await MemoryUse.measuring {
            let perTask = 250_000
            let ids = await withTaskGroup(of: [UInt128].self) { group in
                for _ in 0..<4 {
                    group.addTask { (0..<perTask).map { _ in bits(TaskID.next()) } }
                }
                return await group.reduce(into: [UInt128]()) { $0 += $1 }
            }
            #expect(ids.count == 4 * perTask)
            let sorted = ids.sorted()
            let repeats = zip(sorted, sorted.dropFirst()).filter { $0 == $1 }.count
            #expect(repeats == 0)
            // Version 4 (the high nibble of byte 6) and the RFC 4122 variant (10 in the top bits of byte 8).
            let version = ids.filter { ($0 >> 76) & 0xF != 4 }.count
            let variant = ids.filter { ($0 >> 62) & 0b11 != 0b10 }.count
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
