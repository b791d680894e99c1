import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetRuntime

/// The unrolled block loop fed the way files feed it: many updates of any size, at any
/// alignment of the caller's buffer, checked against `sha256sum`.
@Suite(.onOwnThread) struct SHA256StreamingTests {
    /// 24 seeded random inputs of 0…300 bytes and 3 of 1…4 MiB, each fed in seeded random
    /// update sizes (from 0 bytes up to past 128 KiB, so whole runs of blocks and partial
    /// blocks alternate), compared with one `sha256sum` over all of them.
    @Test func randomInputsInRandomUpdatesHashAsSha256sumHashesThem() async throws {
        var random = SeededRandom(seed: 180_42)
        var inputs = (0..<24).map { _ in fastRandomBytes(Int(random.next() % 301), using: &random) }
        inputs += (0..<3).map { _ in fastRandomBytes((1 << 20) + Int(random.next() % (3 << 20)), using: &random) }
        let directory = try TemporaryDirectory()
        let paths = try inputs.enumerated().map { index, bytes in try directory.write(bytes, named: "input-\(index)") }
        let output = try await toolOutput("sha256sum", paths)
        let digests = output.split(separator: "\n").map { String($0.prefix(64)) }
        #expect(digests.count == inputs.count)
        for (index, input) in inputs.enumerated() where index < digests.count {
            var hasher = SHA256()
            var offset = 0
            while offset < input.count {
                // Mostly small updates on the short inputs; up to 160 KiB on the long ones.
                let most = input.count < 1000 ? 70 : 160 << 10
                let end = min(input.count, offset + Int(random.next() % UInt64(most + 1)))
                input[offset..<end].withUnsafeBytes { hasher.update($0) }
                offset = end
            }
            #expect(Secrets.hex(hasher.finalize()) == digests[index], "input \(index), \(input.count) bytes")
        }
    }

    /// The block loop reads words at any alignment: the same bytes hashed from every offset
    /// within a word of a larger buffer give the same digest.
    @Test func anyAlignmentOfTheCallersBufferGivesTheSameDigest() {
        var random = SeededRandom(seed: 64)
        let message = fastRandomBytes(1000, using: &random)
        let expected = SHA256.hash(message)
        for shift in 1..<8 {
            let padded = [UInt8](repeating: 0xEE, count: shift) + message
            var hasher = SHA256()
            padded.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[shift...])) }
            #expect(hasher.finalize() == expected, "offset \(shift)")
        }
    }
}

/// `count` seeded random bytes, eight from each draw (quick enough for megabytes in a debug build).
private func fastRandomBytes(_ count: Int, using random: inout SeededRandom) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        var index = 0
        while index < count {
            var draw = random.next()
            for _ in 0..<min(8, count - index) {
                buffer[index] = UInt8(truncatingIfNeeded: draw)
                draw >>= 8
                index += 1
            }
        }
        initialized = count
    }
}
