import SkyNetRuntime

/// Why a connection's framing refused what it read: the connection closes with it.
package protocol LineRefusal: Error, CustomStringConvertible, Sendable {}

/// How a connection's lines leave once a handshake gave it a framing of its own
/// (`Connection.frame(sending:receiving:)`): every line sent goes out as `seal` makes it. The
/// transport carries lines and knows nothing of what a framing does (the cluster gives the
/// encrypted frames of a token link).
package protocol MessageSealer: Sendable {
    /// `line` (one whole line, newline included) as its bytes go out.
    mutating func seal(_ line: [UInt8]) -> [UInt8]
    /// Whether what it makes is secret (encrypted), not just framed.
    var encrypts: Bool { get }
}

/// How a connection's bytes become messages once it has a framing of its own.
package protocol MessageOpener: Sendable {
    /// Hands each message of `chunk` from `start` to `body` in order, until the chunk is used up
    /// or `body` returns false (`start` is then past that message); returns why the connection
    /// must close, when what it read cannot be a message.
    mutating func split(_ chunk: UnsafeRawBufferPointer, from start: inout Int, _ body: (Data) -> Bool) -> (any LineRefusal)?
}

/// What a connection reads with: lines, until the handler gives the connection an opener
/// (`Connection.frame`) while it handles the line that ends a handshake; from the next byte on,
/// that opener. The readers (a loop's, a thread's) frame with this one type.
struct InboundFraming {
    private var lines: LineFramer
    private var opener: (any MessageOpener)?

    init(maxLineBytes: Int) {
        lines = LineFramer(maxLineBytes: maxLineBytes)
    }

    /// A line grew too long under the line framing: nothing more can be framed.
    var isBroken: Bool { opener == nil && lines.isBroken }

    /// Hands each line (or message) of `chunk` from `start` to `body`, as `LineFramer.split`
    /// does; `given` is asked for an opener before the chunk and after each line, so a handler
    /// that gave one has the bytes that follow its line opened by it. Returns the opener's
    /// refusal, if any.
    mutating func split(_ chunk: UnsafeRawBufferPointer, from start: inout Int, given: () -> (any MessageOpener)?,
                        _ body: (Connection.Event) -> Bool) -> (any LineRefusal)? {
        if opener == nil { opener = given() }
        if opener == nil {
            var goOn = true
            lines.split(chunk, from: &start) { piece in
                switch piece {
                case .line(let bytes): goOn = body(.line(Data(bytes)))
                case .tooLong: goOn = body(.lineTooLong)
                }
                if let next = given() {
                    opener = next
                    return false
                }
                return goOn
            }
            guard opener != nil, goOn else { return nil }
        }
        return opener?.split(chunk, from: &start) { body(.line($0)) }
    }
}
