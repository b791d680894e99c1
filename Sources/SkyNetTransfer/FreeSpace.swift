import SkyNetRuntime
import SkyNetWork

/// The room a node has for uploads: what the file system holding its work root says is free
/// (`fstatvfs`: blocks available to us × fragment size), less what uploads in flight have
/// reserved and not written yet. An upload reserves its whole size before its first byte is
/// accepted, so concurrent uploads can never together promise more than the disk holds.
package final class FreeSpace: Sendable {
    /// The node's name, for messages.
    let node: String
    /// The free bytes now; throws when the file system cannot tell.
    private let probe: @Sendable () throws -> Int64
    /// Bytes reserved and not written yet, over all reservations.
    private let reserved = Locked<Int64>(0)

    init(node: String, probe: @escaping @Sendable () throws -> Int64) {
        self.node = node
        self.probe = probe
    }

    /// Bytes reserved and not yet written, for tests and status.
    var reservedBytes: Int64 { reserved.withLock { $0 } }

    /// Reserves `bytes` for an upload, or fails with `no-space` when the free space less
    /// what is reserved is smaller.
    func reserve(_ bytes: Int64) throws(ScanFailure) -> Reservation {
        let free: Int64
        do {
            free = try probe()
        } catch {
            throw ScanFailure(code: .noSpace, message: "cannot tell the free space on \(node): \(error)")
        }
        // The check and the taking in one step: two uploads never both count the same bytes.
        let granted = reserved.withLock { reserved in
            let left = free - reserved
            guard left >= bytes else { return Result<Void, ScanFailure>.failure(failure(free: left, needed: bytes)) }
            reserved += bytes
            return .success(())
        }
        try granted.get()
        return Reservation(space: self, bytes: bytes)
    }

    /// The failure for a write that met ENOSPC: the numbers of that moment.
    package func failure(needed: Int64) -> ScanFailure {
        let free = (try? probe()) ?? 0
        return failure(free: free - reservedBytes, needed: needed)
    }

    private func failure(free: Int64, needed: Int64) -> ScanFailure {
        ScanFailure(code: .noSpace, message: Self.message(node: node, free: free, needed: needed))
    }

    /// `no space on gpu1: 12 MiB free, 40 MiB needed`: free rounded down, needed rounded up,
    /// so that the numbers never make it look as if the file fitted.
    static func message(node: String, free: Int64, needed: Int64) -> String {
        "no space on \(node): \(ByteCount.mebibytesDown(free)) MiB free, \(ByteCount.mebibytesUp(needed)) MiB needed"
    }

    fileprivate func give(back bytes: Int64) {
        reserved.withLock { $0 -= bytes }
    }
}

extension FreeSpace {
    /// Bytes one upload reserved: given back as they are written (the file system counts
    /// them from then on), and what is left when the upload ends (`release`, once or more).
    final class Reservation: Sendable {
        private let space: FreeSpace
        /// Reserved and not written or given back yet.
        private let left: Locked<Int64>

        fileprivate init(space: FreeSpace, bytes: Int64) {
            self.space = space
            left = Locked(bytes)
        }

        deinit { release() }

        /// `bytes` more were written: the file system's free count holds them now.
        func wrote(_ bytes: Int64) {
            let given = left.withLock { left in
                let given = min(left, max(0, bytes))
                left -= given
                return given
            }
            if given > 0 { space.give(back: given) }
        }

        /// The upload ended (complete, failed or cancelled): what is left goes back.
        func release() {
            let given = left.withLock { left in
                defer { left = 0 }
                return left
            }
            if given > 0 { space.give(back: given) }
        }
    }
}
