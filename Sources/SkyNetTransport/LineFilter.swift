import SkyNetRuntime


/// Why a line filter refused a line it read: the connection closes with it.
package protocol LineRefusal: Error, CustomStringConvertible, Sendable {}

/// What a connection runs its lines through once it is given one (`Connection.filter`): every
/// line sent goes out as `seal` makes it, every line read reaches the handler as `open` finds
/// it, or the connection closes. Sealing authenticated lines is one (the cluster gives it).
package protocol LineFilter: Sendable {
    associatedtype Refusal: LineRefusal
    /// `line` (one whole line, newline included) as it goes out.
    mutating func seal(_ line: [UInt8]) -> [UInt8]
    /// A line as read (without its newline) as the handler gets it, or why it is refused.
    mutating func open(_ line: Data) -> Result<Data, Refusal>
}

extension LineFilter {
    /// `open` with the refusal's type erased, so that a connection can hold any filter: the
    /// line, or nil with `refusal` set.
    mutating func open(_ line: Data, refusal: inout (any LineRefusal)?) -> Data? {
        switch open(line) {
        case .success(let opened): return opened
        case .failure(let refused):
            refusal = refused
            return nil
        }
    }
}
