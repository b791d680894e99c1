import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetRuntime

/// SHA-256 against FIPS 180-4's examples, the padding's boundary lengths, streaming in any
/// chunks, and `sha256sum` over seeded random inputs.
@Suite(.onOwnThread) struct SHA256Tests {
    private func hex(_ text: String) -> String { Secrets.hex(SHA256.hash(Array(text.utf8))) }

    @Test func theNISTExamplesHashToTheirPublishedDigests() {
        #expect(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let long = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
        #expect(hex(long) == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    @Test func oneMillionAFedInUnevenChunksHashesToTheNISTDigest() {
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        var hasher = SHA256()
        let sizes = [1, 63, 64, 65, 0, 7, 1000, 55, 129, 4096, 3]
        var offset = 0, turn = 0
        while offset < million.count {
            let end = min(million.count, offset + sizes[turn % sizes.count])
            hasher.update(Array(million[offset..<end]))
            offset = end
            turn += 1
        }
        #expect(Secrets.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// 55 bytes leave just room for the padding in one block, 56…63 push the length into a
    /// second block, 64 and 65 start a new block (digests from `sha256sum`).
    @Test func lengthsAroundTheBlockBoundaryArePaddedRight() {
        let expected = [
            55: "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
            56: "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
            63: "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
            64: "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
            65: "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0",
        ]
        for (count, digest) in expected {
            #expect(hex(String(repeating: "a", count: count)) == digest, "\(count) bytes")
        }
    }

    @Test func streamingInRandomChunksEqualsOneShot() {
        var random = SeededRandom(seed: 256)
        for _ in 0..<200 {
            let input = (0..<Int(random.next() % 700)).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            var hasher = SHA256()
            var offset = 0
            while offset < input.count {
                let end = min(input.count, offset + Int(random.next() % 140))
                input[offset..<end].withUnsafeBytes { hasher.update($0) }
                offset = end
            }
            #expect(hasher.finalize() == SHA256.hash(input), "\(input.count) bytes")
        }
    }

    @Test func textIsHashedAsItsUTF8AndACopyKeepsHashing() {
        let text = "prefix: ünïcödé ✓ and more"
        #expect(hex(text) == Secrets.hex(SHA256.hash(Array(text.utf8))))
        var hasher = SHA256()
        hasher.update(text.dropFirst(8))
        #expect(Secrets.hex(hasher.finalize()) == hex(String(text.dropFirst(8))))

        var running = SHA256()
        running.update("abc")
        var copy = running
        #expect(Secrets.hex(copy.finalize()) == hex("abc"))
        running.update("def")
        #expect(Secrets.hex(running.finalize()) == hex("abcdef"))
    }

    /// 64 seeded random inputs of 0…300 bytes and 4 of 10k…100k, hashed by one `sha256sum`.
    @Test func randomInputsHashAsSha256sumHashesThem() async throws {
        var random = SeededRandom(seed: 180_4)
        var inputs = (0..<64).map { _ in randomBytes(Int(random.next() % 301), using: &random) }
        inputs += (0..<4).map { _ in randomBytes(10_000 + Int(random.next() % 90_001), using: &random) }
        let directory = try TemporaryDirectory()
        let paths = try inputs.enumerated().map { index, bytes in try directory.write(bytes, named: "input-\(index)") }
        let output = try await toolOutput("sha256sum", paths)
        let digests = output.split(separator: "\n").map { String($0.prefix(64)) }
        #expect(digests.count == inputs.count)
        for (index, input) in inputs.enumerated() where index < digests.count {
            #expect(Secrets.hex(SHA256.hash(input)) == digests[index], "input \(index), \(input.count) bytes")
        }
    }
}


