import SkyNetRuntime
import SkyNetWire

/// The file requests of issue 21 on a node. A stub until the node's side lands (WP2): this
/// node offers no `files` in its welcome, so a coordinator sends it none, and one that does
/// anyway is answered as a node that does not know these messages (`unknown-type`).
extension NodeSession {
    /// A `transfer`: answered `unknown-type`.
    func startTransfer(_ request: TransferRequest) {
        send(WireError(code: .unknownType, message: "unknown type \"transfer\"", id: request.id).line)
    }

    /// A `basefile`: answered `unknown-type`.
    func storeBasefile(_ request: BasefileRequest) {
        send(WireError(code: .unknownType, message: "unknown type \"basefile\"", id: request.id).line)
    }

    /// A `data` line: no file is being received here, so it is ignored (docs/PROTOCOL.md: a
    /// chunk for an id that is not receiving may follow a request that just failed).
    func receive(_ chunk: FileChunk) {}

    /// An `end` line: ignored, as a chunk is.
    func finishFile(_ end: FileEnd) {}
}
