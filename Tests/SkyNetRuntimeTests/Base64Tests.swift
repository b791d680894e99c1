import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNetRuntime

/// Strict base64: RFC 4648's vectors, seeded round trips against Foundation's, and what a
/// strict decoder refuses.
@Suite(.onOwnThread) struct Base64Tests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: Base64.encode(bytes), as: UTF8.self) }
    private func decoded(_ text: String) -> [UInt8]? { Base64.decode(Array(text.utf8)) }

    @Test func theRFC4648VectorsEncodeAndDecode() {
        let vectors = ["": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            #expect(text(Array(plain.utf8)) == encoded)
            #expect(decoded(encoded) == Array(plain.utf8))
            #expect(Base64.encodedCount(plain.utf8.count) == encoded.utf8.count)
        }
    }

    @Test func seededRandomBytesRoundTripAndMatchFoundation() {
        let seed = FuzzSeed(0xB64)
        var random = seed.random
        for _ in 0..<10_000 {
            let count = Int.random(in: 0...300, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let encoded = text(bytes)
            #expect(encoded == Data(bytes).base64EncodedString(), "\(seed)")
            #expect(decoded(encoded) == bytes, "\(seed)")
        }
    }

    @Test(arguments: [
        "Zg=", "Zm9", "Z", " Zm9v", "Zm9v\n", "Zm 9v", "Zm9v====", "=Zm9", "Zm=v", "Z===",
        "Zm-v", "Zm_v", "Zh==", "Zm9=", "Zm8=Zm8=", "Zg==Zg==", "Zm9v\0\0\0\0", "é===",
    ])
    func whitespaceBadPaddingAndTheURLAlphabetAreRefused(_ bad: String) {
        #expect(decoded(bad) == nil)
    }

    @Test func decodingPastTheOutputIsRefused() {
        let text = Array("Zm9vYmFy".utf8)
        var small = [UInt8](repeating: 0, count: 5)
        let count = text.withUnsafeBytes { text in small.withUnsafeMutableBytes { Base64.decode(text, into: $0) } }
        #expect(count == nil)
        var exact = [UInt8](repeating: 0, count: 6)
        let written = text.withUnsafeBytes { text in exact.withUnsafeMutableBytes { Base64.decode(text, into: $0) } }
        #expect(written == 6)
        #expect(exact == Array("foobar".utf8))
    }

    @Test func encodingAppendsToWhatIsThere() {
        var out = Array(#"{"data":""#.utf8)
        [UInt8]("hi".utf8).withUnsafeBytes { Base64.encode($0, appendingTo: &out) }
        #expect(String(decoding: out, as: UTF8.self) == #"{"data":"aGk="#)
    }
}
