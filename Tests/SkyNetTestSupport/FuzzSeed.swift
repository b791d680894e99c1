import Foundation

/// The seed of a fuzz test: the test's own fixed seed, so that every run walks the same cases,
/// or the one in `SKYNET_FUZZ_SEED`, to repeat a run or to try others
/// (`SKYNET_FUZZ_SEED=123 swift test --filter DecoderFuzzTests`).
///
/// Its description names the seed and how to repeat it: a fuzz test puts it in the comment of
/// each expectation, so a failure prints it.
package struct FuzzSeed: Sendable, CustomStringConvertible {
    package static let variable = "SKYNET_FUZZ_SEED"
    package let value: UInt64

    /// The seed from `SKYNET_FUZZ_SEED` when set (decimal, or hex after `0x`), else `fixed`.
    package init(_ fixed: UInt64) {
        let text = ProcessInfo.processInfo.environment[Self.variable] ?? ""
        let given = text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
        value = given ?? fixed
    }

    /// A generator started from this seed.
    package var random: SeededRandom { SeededRandom(seed: value) }

    package var description: String { "seed \(value), repeat with \(Self.variable)=\(value)" }
}
