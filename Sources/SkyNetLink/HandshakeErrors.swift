/// A peer that answered the hello without proving it knows the token: a node without the
/// token, or one pretending to be a node. Nothing is sent to it.
package struct PeerUnauthenticated: Error, CustomStringConvertible {
    package let peer: String
    package let reason: String

    package init(peer: String, reason: String) {
        self.peer = peer
        self.reason = reason
    }

    package var description: String { "\(peer) is not authenticated (\(reason))" }
}

/// A line over the connection's limit (`maxBytes`) where the node's first answer was due: no
/// node of this protocol, or one gone wrong. Nothing more is read from it.
package struct HandshakeLineTooLong: Error, CustomStringConvertible {
    package let peer: String
    package let maxBytes: Int

    package init(peer: String, maxBytes: Int) {
        self.peer = peer
        self.maxBytes = maxBytes
    }

    package var description: String { "\(peer) answered the hello with a line over \(maxBytes) bytes" }
}

/// A first answer that is not a message of the protocol at all (no JSON object with a type: a
/// malformed message is a `bad-request`): over ssh, what a login's start-up files printed on
/// stdout before the node started. Reads as the decoding error it wraps; `firstLine` is the
/// start of what came, for a message that shows it.
package struct NotTheProtocol: Error, CustomStringConvertible {
    package let firstLine: String
    package let error: any Error

    package init(firstLine: String, error: any Error) {
        self.firstLine = firstLine
        self.error = error
    }

    package var description: String { "\(error)" }
}
