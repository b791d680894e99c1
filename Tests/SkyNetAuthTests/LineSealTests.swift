import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetRuntime
import SkyNetTestSupport

/// Authenticated lines (`SEQ SP MAC SP JSON`): what opens, and why each wrong line is refused.
@Suite(.onOwnThread) struct LineSealTests {
    /// Both ends of one session, from a transcript as the handshake would build it.
    func session(token: String = "a token of sixteen bytes", seed: UInt64 = 1) -> (coordinator: SessionKeys, node: SessionKeys) {
        var random = SeededRandom(seed: seed)
        let nonce = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
        let nodeNonce = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
        let transcript = AuthTranscript(hello: Array(HandTranscript.hello(nonce: nonce).utf8), nodeNonce: nodeNonce)
        let key = HMACSHA256(key: Array(token.utf8))
        return (transcript.sessionKeys(token: key, as: .coordinator), transcript.sessionKeys(token: key, as: .node))
    }

    /// A sealed line as the framer hands it over: without its newline.
    func sealed(_ json: String, with seal: inout LineSeal) -> [UInt8] {
        Array(seal.seal(Array((json + "\n").utf8)).dropLast())
    }

    func line(_ number: Int) -> String { #"{"type":"ping","id":\#(number)}"# }

    @Test func manyLinesOpenInOrderToTheirJSON() throws {
        let (coordinator, node) = session()
        var sending = LineSeal(key: coordinator.sending), receiving = LineSeal(key: node.receiving)
        var random = SeededRandom(seed: 7)
        for number in 0..<2000 {
            // Bodies of many lengths, spaces and all, around the hash's 64-byte blocks.
            let padding = String(repeating: "x ", count: Int.random(in: 0...100, using: &random))
            let json = #"{"type":"ping","id":\#(number),"pad":"\#(padding)"}"#
            let bytes = sealed(json, with: &sending)
            #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("\(number) "))
            #expect(try receiving.open(bytes).get() == Array(json.utf8))
        }
        #expect(sending.sequence == 2000 && receiving.sequence == 2000)
    }

    /// The line of the document, byte for byte: SEQ in decimal, the first 16 bytes of the HMAC
    /// over SEQ as 8 bytes big-endian and the JSON, in lowercase hex.
    @Test func aSealedLineIsTheSequenceTheTruncatedMACAndTheJSON() {
        var seal = LineSeal(key: HMACSHA256(key: Array("k".utf8)))
        for sequence in 0..<3 {
            let json = line(sequence)
            let expected = HandTranscript.seal(json, sequence: UInt64(sequence), key: Array("k".utf8)) + "\n"
            #expect(String(decoding: seal.seal(Array((json + "\n").utf8)), as: UTF8.self) == expected)
        }
    }

    /// Every bit of a sealed line (the fourth of its session), flipped in turn. The case bit of
    /// a hex letter in the MAC is left to `aMACInUpperCaseHexIsRefused`.
    @Test func aFlippedBitAnywhereIsRefusedWithTheRightRejection() throws {
        let (coordinator, node) = session()
        var sending = LineSeal(key: coordinator.sending), receiving = LineSeal(key: node.receiving)
        for number in 0..<3 {
            _ = try? receiving.open(sealed(line(number), with: &sending)).get()
        }
        let original = sealed(#"{"type":"scan","id":3,"task":{"input":12,"duration":0.5}}"#, with: &sending)
        let macRange = 2..<34  // after "3 "
        var refused = 0
        for index in original.indices {
            for bit in 0..<8 {
                var altered = original
                altered[index] ^= 1 << bit
                if macRange.contains(index), bit == 5, isHexLetter(original[index]) { continue }
                var opener = receiving
                let result = opener.open(altered)
                let expected = expectedRejection(altered, at: index, macRange: macRange)
                #expect(result == .failure(expected), "byte \(index) bit \(bit): \(result)")
                #expect(opener.sequence == 3, "a refused line must not move the sequence on")
                refused += 1
            }
        }
        #expect(refused > 8 * 50)
        #expect(try receiving.open(original).get().count > 0)  // the unaltered line still opens
    }

    /// A flip in the sequence number reads as another number (replayed, or out of order) or as
    /// no sequence number at all; one in the MAC or the JSON leaves the MAC wrong.
    func expectedRejection(_ line: [UInt8], at index: Int, macRange: Range<Int>) -> LineSeal.Rejection {
        let isDigit = { (byte: UInt8) in byte >= 0x30 && byte <= 0x39 }
        let isLowerHex = { (byte: UInt8) in isDigit(byte) || (byte >= 0x61 && byte <= 0x66) }
        if index == 0 {
            // Another number: the MAC (checked first) is wrong for it, so the line is forged.
            guard isDigit(line[0]) else { return .missing }
            return .wrongMAC(UInt64(line[0] - 0x30))
        }
        if index == 1 || index == macRange.upperBound { return .missing }  // a separator
        if macRange.contains(index), !isLowerHex(line[index]) { return .missing }
        return .wrongMAC(3)
    }

    func isHexLetter(_ byte: UInt8) -> Bool { (0x61...0x66).contains(byte) }

    /// The document says lowercase hex. A MAC whose letters were put in upper case is a line
    /// that was not sent: flipping the case bit is a one-bit alteration like any other.
    @Test func aMACInUpperCaseHexIsRefused() throws {
        let (coordinator, node) = session()
        var sending = LineSeal(key: coordinator.sending), receiving = LineSeal(key: node.receiving)
        let original = sealed(line(0), with: &sending)
        let text = String(decoding: original, as: UTF8.self)
        let parts = text.split(separator: " ", maxSplits: 2)
        #expect(parts[1].contains(where: { "abcdef".contains($0) }), "this MAC has no letter to flip")
        let upper = Array("\(parts[0]) \(parts[1].uppercased()) \(parts[2])".utf8)
        var opener = receiving
        #expect(throws: LineSeal.Rejection.self, "a MAC in upper case opened") { try opener.open(upper).map(\.count).get() }
        #expect(try receiving.open(original).get() == Array(line(0).utf8))
    }

    /// The sequence number is written in decimal without leading zeros: `03` is not how the
    /// sender wrote 3, so the line is not the one it sealed.
    @Test func aSequenceNumberWithLeadingZerosIsRefused() throws {
        let (coordinator, node) = session()
        var sending = LineSeal(key: coordinator.sending), receiving = LineSeal(key: node.receiving)
        let original = sealed(line(0), with: &sending)
        var opener = receiving
        #expect(throws: LineSeal.Rejection.self, "a sequence number 00 opened") { try opener.open([0x30] + original).map(\.count).get() }
        #expect(try receiving.open(original).get() == Array(line(0).utf8))
    }

    @Test func aReplayedLineIsRefusedAsReplayed() throws {
        let (coordinator, node) = session()
        var sending = LineSeal(key: coordinator.sending), receiving = LineSeal(key: node.receiving)
        let first = sealed(line(0), with: &sending), second = sealed(line(1), with: &sending)
        _ = try receiving.open(first).get()
        _ = try receiving.open(second).get()
        #expect(receiving.open(first) == .failure(.replayed(0)))
        #expect(receiving.open(second) == .failure(.replayed(1)))
        #expect(LineSeal.Rejection.replayed(1).description == "a replayed line (sequence 1 was already received)")
    }

    @Test func aLineAheadOfItsTurnIsRefusedAsOutOfOrder() throws {
        let (coordinator, node) = session()
        var sending = LineSeal(key: coordinator.sending), receiving = LineSeal(key: node.receiving)
        let lines = (0..<3).map { sealed(line($0), with: &sending) }
        #expect(receiving.open(lines[1]) == .failure(.outOfOrder(1, expected: 0)))
        _ = try receiving.open(lines[0]).get()
        #expect(receiving.open(lines[2]) == .failure(.outOfOrder(2, expected: 1)))
        #expect(try receiving.open(lines[1]).get() == Array(line(1).utf8))  // a dropped line is never skipped
        #expect(LineSeal.Rejection.outOfOrder(2, expected: 1).description == "a line out of order (sequence 2, expected 1)")
    }

    @Test func aPlainLineIsRefusedAsMissingItsSeal() {
        var receiving = LineSeal(key: session().node.receiving)
        for plain in [line(0), "", " ", "0", "0 ", "0  " + line(0), "-1 " + String(repeating: "0", count: 32) + " {}",
                      "18446744073709551616 " + String(repeating: "0", count: 32) + " {}",
                      "0 " + String(repeating: "0", count: 31) + " {}", "0 " + String(repeating: "g", count: 32) + " {}"] {
            #expect(receiving.open(Array(plain.utf8)) == .failure(.missing), "\(plain)")
        }
        #expect(receiving.sequence == 0)
        #expect(LineSeal.Rejection.missing.description == "a line without a sequence number and MAC on an authenticated connection")
    }

    /// The two directions have keys of their own: a node's line sent back to it (a reflection)
    /// does not open, nor does a line of another session with the same token.
    @Test func aLineSealedWithTheOtherDirectionsOrSessionsKeyIsRefused() throws {
        let (coordinator, node) = session()
        var fromNode = LineSeal(key: node.sending)
        let reflected = sealed(line(0), with: &fromNode)
        var nodeReceiving = LineSeal(key: node.receiving)
        #expect(nodeReceiving.open(reflected) == .failure(.wrongMAC(0)))
        var coordinatorReceiving = LineSeal(key: coordinator.receiving)
        #expect(try coordinatorReceiving.open(reflected).get() == Array(line(0).utf8))

        var otherSession = LineSeal(key: session(seed: 2).coordinator.sending)
        var receiving = LineSeal(key: node.receiving)
        #expect(receiving.open(sealed(line(0), with: &otherSession)) == .failure(.wrongMAC(0)))
        var otherToken = LineSeal(key: session(token: "another token of 16 bytes").coordinator.sending)
        #expect(receiving.open(sealed(line(0), with: &otherToken)) == .failure(.wrongMAC(0)))
        #expect(LineSeal.Rejection.wrongMAC(0).description == "a line whose MAC is wrong (sequence 0): altered, or not from the peer")
    }

    /// The transcript as the document spells it: the library's proof and keys equal the ones
    /// computed by hand from the labels.
    @Test func theProofAndKeysAreTheDocumentsHMACsOverTheTranscript() {
        let hello = Array(HandTranscript.hello(nonce: Array(repeating: 7, count: 32)).utf8)
        let nodeNonce = Array(repeating: UInt8(9), count: 32)
        let hand = HandTranscript(token: "a token of sixteen bytes", hello: hello, nodeNonce: nodeNonce)
        let transcript = AuthTranscript(hello: hello, nodeNonce: nodeNonce)
        let token = HMACSHA256(key: Array(hand.token.utf8))
        #expect(transcript.coordinatorProof(token: token) == hand.proof)
        let keys = transcript.sessionKeys(token: token, as: .coordinator)
        #expect(keys.sending.tag([1, 2]) == HMACSHA256(key: hand.coordinatorToNode).tag([1, 2]))
        #expect(keys.receiving.tag([1, 2]) == HMACSHA256(key: hand.nodeToCoordinator).tag([1, 2]))
        let other = AuthTranscript(hello: hello, nodeNonce: Array(repeating: 8, count: 32))
        #expect(other.coordinatorProof(token: token) != hand.proof, "the proof must depend on the node's nonce")
    }
}
