import Foundation

/// Whether the tests run under a sanitizer (`.ci/tsan` sets `SKYNET_TEST_SANITIZED=1`), where
/// instrumented code moves and hashes bytes about ten times slower: a test whose subject is a
/// transfer caught part way sends less, so that it still ends within its bounds. What it
/// checks stays the same.
package enum SanitizedRun {
    package static let variable = "SKYNET_TEST_SANITIZED"
    package static let isOn = ProcessInfo.processInfo.environment[variable] == "1"

    /// `size` bytes, or an eighth of them under a sanitizer.
    package static func bytes(_ size: Int) -> Int { isOn ? size / 8 : size }
}
