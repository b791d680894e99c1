import SkyNetAuth
import SkyNetRuntime
import SkyNetTransport

/// The encrypted frames of a token link are the framing the cluster gives a connection after
/// its handshake: the transport carries lines and knows nothing of cryptography.
extension FrameSealer: MessageSealer {}
extension FrameOpener.Refusal: LineRefusal {}

/// `FrameOpener` as a transport's opener: its refusal, type-erased.
private struct LinkOpener: MessageOpener {
    var opener: FrameOpener

    mutating func split(_ chunk: UnsafeRawBufferPointer, from start: inout Int, _ body: (Data) -> Bool) -> (any LineRefusal)? {
        opener.split(chunk, from: &start, body)
    }
}

extension Connection {
    /// From now on every line sent leaves as a frame sealed with `ciphers.send`, and every byte
    /// read after the line being handled must be frames that open with `ciphers.receive`
    /// (`frame(sending:receiving:)`): call it on the reader while handling the line that
    /// completed the handshake.
    package func encrypt(with ciphers: (send: NoiseCipher, receive: NoiseCipher)) {
        frame(sending: FrameSealer(ciphers.send),
              receiving: LinkOpener(opener: FrameOpener(ciphers.receive, maxMessageBytes: limits.maxLineBytes)))
    }

    /// From now on messages go as frames without a cipher (`LENGTH ‖ MESSAGE`), both ways: a
    /// `--stdio` link of files version 2, whose ssh channel keeps the bytes secret and whole,
    /// so that a file's chunks can go as raw bytes. Called as `encrypt` is, on the line that
    /// granted it (the welcome).
    package func frameInClear() {
        frame(sending: FrameSealer(nil), receiving: LinkOpener(opener: FrameOpener(nil, maxMessageBytes: limits.maxLineBytes)))
    }
}
