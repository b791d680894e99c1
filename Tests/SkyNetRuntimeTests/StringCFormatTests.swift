import Foundation
import SkyNet
import SkyNetTestSupport
import Testing

/// `String(cFormat:)` writes what Foundation's `String(format:)` wrote, byte for byte, for
/// every format the library and the CLI use.
@Suite struct StringCFormatTests {
    static let formats = ["%.2f", "%.3f", "%.0f%%", "%g", "%.2f ms"]

    @Test func everyFormatWeUseMatchesFoundationOnEdgesAndSeededValues() {
        let seed: UInt64 = 19
        var random = SeededRandom(seed: seed)
        let edges: [Double] = [0, -0.0, 0.5, 1.5, 2.5, 0.125, 0.005, 0.015, 1e-7, 123_456.789, 1e15, 1e300, -3.14159,
                               .infinity, -.infinity, .nan, .greatestFiniteMagnitude]
        let drawn = (0..<2_000).map { _ in Double.random(in: -1e6...1e6, using: &random) }
        for format in Self.formats {
            for value in edges + drawn {
                #expect(String(cFormat: format, value) == String(format: format, value), "\(format) of \(value) (seed \(seed))")
            }
        }
    }
}
