import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// A file a `FilePump` sends: from a coordinator, a task's input or a basefile (`file` nil);
/// from a node, `returns[file]` of a transfer. The closures run on the pump's thread, except
/// `done`'s result, which the owner hands on (it must be quick: fulfil a signal).
package struct OutgoingFile: Sendable {
    /// The request the file belongs to.
    package let id: Int
    /// Its index in the transfer's `returns` (a node's return), or nil (a coordinator's file).
    package let file: Int?
    /// The largest size it may have: beyond, it is not sent (`file-too-large`).
    package let maxSize: Int64
    /// Whose bound `maxSize` is when it is not this side's own --max-file-size: the peer's
    /// name, when the peer's is smaller. Over a peer's bound, another system may still take it.
    package var limitOwner: String? = nil
    /// How messages name the bound when it is not a --max-file-size at all (a node's return:
    /// the coordinator's `max_return_size`); nil: a --max-file-size, as `limitOwner` says whose.
    package var limitName: String? = nil
    /// How messages name it (`photos/a.jpg`).
    package let name: String
    /// Opens the file (component-wise, no links), or says why not.
    package let open: @Sendable () throws(ScanFailure) -> OpenFile
    /// The line that announces the file once its size, mode and time are known (`transfer`,
    /// `basefile`, `return`), sent before its first chunk; nil: none.
    package let header: @Sendable (FileHeader) -> [UInt8]?
    /// Whether its request was cancelled or failed meanwhile: looked at before every chunk.
    package let isCancelled: @Sendable () -> Bool
    /// Called once: the file went out whole (its `end` sent), or why not (nothing more of it is sent).
    package let done: @Sendable (Result<Void, ScanFailure>) -> Void
    /// Tests only: called after each chunk is sent, with the bytes sent so far.
    package var afterChunk: (@Sendable (Int64) -> Void)? = nil

    package init(id: Int, file: Int?, maxSize: Int64, limitOwner: String? = nil, limitName: String? = nil, name: String,
                 open: @escaping @Sendable () throws(ScanFailure) -> OpenFile,
                 header: @escaping @Sendable (FileHeader) -> [UInt8]?, isCancelled: @escaping @Sendable () -> Bool,
                 done: @escaping @Sendable (Result<Void, ScanFailure>) -> Void,
                 afterChunk: (@Sendable (Int64) -> Void)? = nil) {
        self.id = id
        self.file = file
        self.maxSize = maxSize
        self.limitOwner = limitOwner
        self.limitName = limitName
        self.name = name
        self.open = open
        self.header = header
        self.isCancelled = isCancelled
        self.done = done
        self.afterChunk = afterChunk
    }

    /// The bound for a coordinator's file: the scan's --max-file-size, or the peer's when smaller.
    package static func limit(scan: Int64, peer: Int64?, named name: String) -> (maxSize: Int64, owner: String?) {
        guard let peer, peer < scan else { return (scan, nil) }
        return (peer, name)
    }
}
