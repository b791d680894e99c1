import Foundation
import SkyNet
import SkyNetRuntime
import SkyNetTransport

/// The receiving end of a `NOTIFY_SOCKET`, as systemd binds it: an `AF_UNIX` datagram socket at
/// a path (in a fresh folder of /tmp) or at an abstract name `@skynet-test-<uuid>`. A thread of
/// its own reads the datagrams into `log`, one entry each (its lines joined by `\n`), the last
/// 10,000 kept; `close()` ends it.
package final class NotifySocket: Sendable {
    /// What `NOTIFY_SOCKET` should say: `/tmp/…/notify` or `@skynet-test-…`.
    package let address: String
    /// Every datagram received so far, and those to come.
    package let log = LineLog(keep: 10_000)
    private let socket: Socket
    private let folder: String?
    private let stopping = Locked(false)
    private let ended = AsyncSignal<Void>()

    /// Binds a fresh socket: abstract, or at a path.
    package init(abstract: Bool) throws {
        let name = "skynet-test-\(UUID().uuidString.prefix(12))"
        if abstract {
            address = "@" + name
            folder = nil
        } else {
            let folder = "/tmp/" + name
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            address = folder + "/notify"
            self.folder = folder
        }
        socket = try Socket.unixDatagram()
        do {
            try socket.bind(to: try UnixSocketAddress(address))
        } catch {
            socket.close()
            if let folder { try? FileManager.default.removeItem(atPath: folder) }
            throw error
        }
        // Wakes the reader every 100 ms, so that `close()` is noticed.
        socket.setReceiveTimeout(.milliseconds(100))
        startThread(named: "skynet-test-notify") { [socket, log, stopping, ended] in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
            defer { buffer.deallocate() }
            while !stopping.withLock({ $0 }) {
                guard let count = try? socket.receive(into: buffer) else { continue }
                log.append(String(decoding: UnsafeRawBufferPointer(rebasing: buffer[..<count]), as: UTF8.self))
            }
            socket.close()
            log.close()
            ended.fulfil(())
        }
    }

    /// The datagrams received so far.
    package var datagrams: [String] { log.lines }

    /// Waits (at most `timeout`) until `count` datagrams, received before or after the call,
    /// satisfy `predicate`; false if they did not.
    package func wait(for count: Int = 1, timeout: Duration = .seconds(10), where predicate: @escaping @Sendable (String) -> Bool) async -> Bool {
        let seen = Locked(0)
        let log = self.log
        let found = try? await withTimeout(timeout) {
            await log.first { datagram in
                predicate(datagram) && seen.withLock { seen in
                    seen += 1
                    return seen >= count
                }
            }
        }
        return found != nil
    }

    /// Stops the reader, closes the socket and removes its folder.
    package func close() async {
        stopping.withLock { $0 = true }
        await ended.value
        if let folder { try? FileManager.default.removeItem(atPath: folder) }
    }
}
