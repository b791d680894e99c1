import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetWire
@testable import SkyNetWork

/// Failure codes are an enum, but on the wire they stay the protocol's words.
struct FailureCodeTests {
    static let spellings = ["task-failed", "busy", "cancelled", "deadline", "unknown-job", "bad-reply",
                            "bad-request", "unknown-type", "frame-too-large", "hello-required", "unsupported-version", "unauthorized",
                            "no-space", "file-too-large", "file-changed", "missing-return", "bad-file"]

    @Test func everyKnownCodeIsReadAsItsOwnCaseAndSpelledAsOnTheWire() {
        let codes = Self.spellings.map { FailureCode(rawValue: $0) }
        #expect(codes.map(\.rawValue) == Self.spellings)
        #expect(Set(codes).count == Self.spellings.count)
        #expect(codes.allSatisfy { if case .other = $0 { false } else { true } })
        #expect(FailureCode(rawValue: "busy") == .busy && FailureCode(rawValue: "unknown-job") == .unknownJob)
    }

    @Test func anUnknownCodeIsKeptAsItCameAndSentBackTheSame() throws {
        #expect(FailureCode(rawValue: "out-of-coffee") == .other("out-of-coffee"))
        let line = #"{"type":"failure","id":3,"task":"6F2A7D38-4F6A-4B8B-9F1C-0E1D2C3B4A59","code":"out-of-coffee","message":"m"}"#
        let reply = try Reply.decode(Data(line.utf8))
        guard case .failure(_, _, let code, _) = reply else { Issue.record("not a failure: \(reply)"); return }
        #expect(code.rawValue == "out-of-coffee")
        #expect(String(decoding: reply.line, as: UTF8.self).contains(#""code":"out-of-coffee""#))
    }
}
