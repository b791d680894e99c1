import SkyNetAuth
import SkyNetTransport
import SkyNetRuntime
import SkyNetWire

/// Sealing is the line filter the cluster gives a connection after a token handshake: the
/// transport carries lines and knows nothing of authentication.
extension LineSeal: LineFilter {}
extension LineSeal.Rejection: LineRefusal {}

extension Connection {
    /// From now on every line sent is sealed with `sending` and every line read must open with
    /// `receiving` (`filter(sending:receiving:)`): call it on the reader thread while handling
    /// the line that completed the handshake.
    package func authenticate(sending: LineSeal, receiving: LineSeal) {
        filter(sending: sending, receiving: receiving)
    }

    /// Whether lines are authenticated (sealed) on this connection.
    package var isAuthenticated: Bool { isFiltered }
}
