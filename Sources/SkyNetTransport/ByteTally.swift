/// Bytes sent and received over connections (`skynet_bytes_total`): those of connections that
/// ended, kept, plus those of live ones, read when summed.
package struct ByteTally: Sendable, Equatable {
    package var sent: UInt64 = 0
    package var received: UInt64 = 0

    package init() {}

    /// Adds what `connection` has moved so far (`Connection.progress`).
    package mutating func add(_ connection: Connection) {
        let progress = connection.progress
        sent &+= progress.sent
        received &+= progress.received
    }

    /// This tally with what each of `connections` has moved so far.
    package func adding(_ connections: some Sequence<Connection>) -> ByteTally {
        var total = self
        for connection in connections { total.add(connection) }
        return total
    }
}
