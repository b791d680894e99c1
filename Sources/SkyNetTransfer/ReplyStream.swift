import SkyNetWire

/// Where the lines a node streams for a pending transfer go (`return`, `data`, `end`, in the
/// order they came), registered with `PeerConnection.stream(_:to:)`. Called on the link's
/// reader thread, one line at a time: it may write to disk (that is the back pressure a slow
/// disk puts on the node), but must not wait for anything else.
package protocol ReplyStream: Sendable {
    func receive(_ reply: Reply)
}
