import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNetAuth
@testable import SkyNetRuntime

/// Noise NNpsk0 (X25519, ChaCha20-Poly1305, SHA-256): two of ours agree and talk; a wrong key,
/// a changed message or a small-order key is refused; after the handshake a replayed,
/// reordered or changed message fails; and the messages and transport keys are byte for byte
/// those of a Python implementation written from the Noise specification on
/// `python3-cryptography`'s primitives.
@Suite(.onOwnThread) struct NoiseHandshakeTests {
    private let psk = (0..<32).map { UInt8($0 * 3 + 1) }
    private let prologue = Array("skynet test prologue".utf8)

    /// Both messages; the two sides' ciphers and the payloads each read.
    private func handshake(initiatorPSK: [UInt8]? = nil, responderPSK: [UInt8]? = nil,
                           initiatorEphemeral: (privateKey: [UInt8], publicKey: [UInt8]) = X25519.keyPair(),
                           responderEphemeral: (privateKey: [UInt8], publicKey: [UInt8]) = X25519.keyPair())
        throws(NoiseHandshake.Failure) -> (messages: [[UInt8]], initiator: NoiseHandshake, responder: NoiseHandshake, payloads: [[UInt8]]) {
        var initiator = NoiseHandshake(role: .initiator, psk: initiatorPSK ?? psk, prologue: prologue, ephemeral: initiatorEphemeral)
        var responder = NoiseHandshake(role: .responder, psk: responderPSK ?? psk, prologue: prologue, ephemeral: responderEphemeral)
        let first = try initiator.writeMessage(payload: Array("hello".utf8))
        let hello = try responder.readMessage(first)
        let second = try responder.writeMessage(payload: Array("welcome".utf8))
        let welcome = try initiator.readMessage(second)
        return ([first, second], initiator, responder, [hello, welcome])
    }

    @Test func twoSidesAgreeAndTalkBothWays() throws {
        let run = try handshake()
        #expect(run.payloads == [Array("hello".utf8), Array("welcome".utf8)])
        #expect(run.messages.map(\.count) == [32 + 5 + 16, 32 + 7 + 16])
        #expect(run.initiator.handshakeHash == run.responder.handshakeHash)
        var (toResponder, fromResponder) = try run.initiator.split()
        var (toInitiator, fromInitiator) = try run.responder.split()
        for index in 0..<5 {
            let line = Array("line \(index)".utf8)
            #expect(fromInitiator.open(toResponder.seal(line)) == line)
            #expect(fromResponder.open(toInitiator.seal(line + line)) == line + line)
        }
    }

    /// A peer with another key: the responder cannot open the first message (and learns
    /// nothing more than that).
    @Test func aWrongPreSharedKeyIsRefusedAtTheFirstMessage() {
        var other = psk
        other[31] ^= 1
        #expect(throws: NoiseHandshake.Failure.refused) { try handshake(responderPSK: other) }
        #expect(throws: NoiseHandshake.Failure.refused) { try handshake(initiatorPSK: other) }
    }

    @Test func aChangedHandshakeMessageIsRefused() throws {
        let first = try { var i = NoiseHandshake(role: .initiator, psk: psk, prologue: prologue); return try i.writeMessage() }()
        for index in first.indices {
            var changed = first
            changed[index] ^= 0x20
            var responder = NoiseHandshake(role: .responder, psk: psk, prologue: prologue)
            #expect(throws: NoiseHandshake.Failure.self) { try responder.readMessage(changed) }
        }
        var responder = NoiseHandshake(role: .responder, psk: psk, prologue: prologue)
        #expect(throws: NoiseHandshake.Failure.tooShort) { try responder.readMessage(Array(first.prefix(40))) }
        // A refused message leaves the handshake as it was: the right one is still read.
        var changed = first
        changed[40] ^= 1
        #expect(throws: NoiseHandshake.Failure.refused) { try responder.readMessage(changed) }
        #expect(try responder.readMessage(first) == [])
        // Another prologue is another handshake.
        var elsewhere = NoiseHandshake(role: .responder, psk: psk, prologue: Array("other".utf8))
        #expect(throws: NoiseHandshake.Failure.refused) { try elsewhere.readMessage(first) }
    }

    /// Transport messages: a replay, a reordering, a drop or a changed byte each fail, and
    /// the cipher stays where it was (the right next message still opens).
    @Test func replayedReorderedDroppedOrChangedMessagesFail() throws {
        let run = try handshake()
        var (send, _) = try run.initiator.split()
        var (_, receive) = try run.responder.split()
        let one = send.seal(Array("one".utf8)), two = send.seal(Array("two".utf8)), three = send.seal(Array("three".utf8))
        #expect(receive.open(two) == nil)  // reordered (or one dropped)
        #expect(receive.open(one) == Array("one".utf8))
        #expect(receive.open(one) == nil)  // replayed
        var changed = two
        changed[0] ^= 1
        #expect(receive.open(changed) == nil)
        #expect(receive.open(Array(two.dropLast())) == nil)  // cut
        #expect(receive.open(two) == Array("two".utf8))
        #expect(receive.open(three) == Array("three".utf8))
        #expect(receive.counter == 3)
    }

    @Test func aSmallOrderEphemeralKeyIsRefused() throws {
        var initiator = NoiseHandshake(role: .initiator, psk: psk, prologue: prologue)
        var responder = NoiseHandshake(role: .responder, psk: psk, prologue: prologue)
        _ = try responder.readMessage(try initiator.writeMessage())
        var answer = try responder.writeMessage()
        for index in 0..<32 { answer[index] = 0 }  // the point 0
        #expect(throws: NoiseHandshake.Failure.weakKey) { try initiator.readMessage(answer) }
        #expect(throws: NoiseHandshake.Failure.outOfTurn) { try initiator.split() }
    }

    /// A Python implementation of Noise's CipherState, SymmetricState and NNpsk0 from the
    /// specification (revision 34), on python3-cryptography's X25519, ChaCha20Poly1305 and
    /// HMAC: given the same keys, it gives both messages and both transport keys.
    static let reference = #"""
    import sys, hashlib, hmac
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    from cryptography.hazmat.primitives import serialization
    h = bytes.fromhex
    psk, prologue, ie, re = (h(a) for a in sys.argv[1:5])
    def H(d): return hashlib.sha256(d).digest()
    def hkdf(ck, ikm, n):
        t = hmac.new(ck, ikm, hashlib.sha256).digest(); out = []; prev = b""
        for i in range(1, n + 1):
            prev = hmac.new(t, prev + bytes([i]), hashlib.sha256).digest(); out.append(prev)
        return out
    def pub(k): return k.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    class Sym:
        def __init__(s):
            name = b"Noise_NNpsk0_25519_ChaChaPoly_SHA256"
            s.h = H(name) if len(name) > 32 else name.ljust(32, b"\0"); s.ck = s.h; s.k = None; s.n = 0
        def mix_hash(s, d): s.h = H(s.h + d)
        def mix_key(s, ikm): s.ck, k = hkdf(s.ck, ikm, 2); s.k, s.n = k, 0
        def mix_key_and_hash(s, ikm):
            s.ck, th, k = hkdf(s.ck, ikm, 3); s.mix_hash(th); s.k, s.n = k, 0
        def nonce(s): return b"\0\0\0\0" + s.n.to_bytes(8, "little")
        def enc(s, p):
            c = ChaCha20Poly1305(s.k).encrypt(s.nonce(), p, s.h); s.n += 1; s.mix_hash(c); return c
        def dec(s, c):
            p = ChaCha20Poly1305(s.k).decrypt(s.nonce(), c, s.h); s.n += 1; s.mix_hash(c); return p
    i, r = Sym(), Sym()
    for s in (i, r): s.mix_hash(prologue)
    ie, re = X25519PrivateKey.from_private_bytes(ie), X25519PrivateKey.from_private_bytes(re)
    # -> psk, e
    i.mix_key_and_hash(psk); i.mix_hash(pub(ie)); i.mix_key(pub(ie)); m1 = pub(ie) + i.enc(b"hello")
    r.mix_key_and_hash(psk); r.mix_hash(m1[:32]); r.mix_key(m1[:32]); assert r.dec(m1[32:]) == b"hello"
    # <- e, ee
    r.mix_hash(pub(re)); r.mix_key(pub(re)); r.mix_key(re.exchange(X25519PublicKey.from_public_bytes(m1[:32])))
    m2 = pub(re) + r.enc(b"welcome")
    i.mix_hash(m2[:32]); i.mix_key(m2[:32]); i.mix_key(ie.exchange(X25519PublicKey.from_public_bytes(m2[:32])))
    assert i.dec(m2[32:]) == b"welcome"
    k1, k2 = hkdf(i.ck, b"", 2)
    assert (k1, k2) == tuple(hkdf(r.ck, b"", 2)) and i.h == r.h
    # The first transport message each way, under the split's keys.
    t1 = ChaCha20Poly1305(k1).encrypt(b"\0" * 12, b"to the responder", b"")
    t2 = ChaCha20Poly1305(k2).encrypt(b"\0" * 12, b"to the initiator", b"")
    print(m1.hex()); print(m2.hex()); print(i.h.hex()); print(t1.hex()); print(t2.hex())
    """#

    @Test func messagesAndKeysMatchAPythonImplementationOfTheSpecification() async throws {
        let initiatorKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 * 7 + 11) }
        let responderKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 * 5 + 200) }
        let run = try handshake(initiatorEphemeral: (initiatorKey, X25519.publicKey(for: initiatorKey)),
                                responderEphemeral: (responderKey, X25519.publicKey(for: responderKey)))
        var (toResponder, _) = try run.initiator.split()
        var (toInitiator, _) = try run.responder.split()
        let ours = [run.messages[0], run.messages[1], run.initiator.handshakeHash,
                    toResponder.seal(Array("to the responder".utf8)), toInitiator.seal(Array("to the initiator".utf8))].map(Secrets.hex)
        let directory = try TemporaryDirectory()
        let script = try directory.write(Array(Self.reference.utf8), named: "noise.py")
        let output = try await toolOutput("/usr/bin/python3", [script, Secrets.hex(psk), Secrets.hex(prologue),
                                                               Secrets.hex(initiatorKey), Secrets.hex(responderKey)])
        let theirs = output.split(separator: "\n").map(String.init)
        #expect(theirs == ours)
    }
}
