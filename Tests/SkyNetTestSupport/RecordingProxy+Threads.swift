import Foundation
import SkyNet
import SkyNetRuntime
import SkyNetTransport

/// The proxy's threads: accepting, and one pump per direction of each connection.
extension RecordingProxy {
    func acceptLoop() {
        defer { threadEnded() }
        while true {
            guard let (client, _) = try? listener.accept() else { return }
            let index: Int? = state.withLock { state in
                guard !state.stopped, state.links.count < maxConnections else { return nil }
                state.links.append(Link())
                state.open.insert(client)
                return state.links.count - 1
            }
            guard let index else {
                client.close()
                if state.withLock({ $0.stopped }) { return } else { continue }
            }
            guard let server = try? Socket.connect(host: "127.0.0.1", port: targetPort, timeout: .seconds(5)) else {
                state.withLock { state in
                    state.open.remove(client)
                    state.links[index].pumps = 0
                    state.links[index].recording.endedAt = .now
                }
                client.close()
                state.withLock { $0.links[index].ended }.fulfil(())
                continue
            }
            let admitted = state.withLock { state in
                guard !state.stopped else { return false }
                state.open.insert(server)
                state.threads += 2
                return true
            }
            guard admitted else {
                _ = state.withLock { $0.open.remove(client) }
                client.close()
                server.close()
                return
            }
            spawn("proxy-up-\(index)") { [self] in pump(.fromClient, index, from: client, to: server) }
            spawn("proxy-down-\(index)") { [self] in pump(.fromServer, index, from: server, to: client) }
        }
    }

    /// Copies `from` to `to`, recording, until `from` ends or a send fails; then half-closes
    /// `to` (or cuts both on a failure). Bytes go on as they come, but in the direction a tamper
    /// watches a unit at a time (`LinkUnits`), so that the tamper can change a whole frame. The
    /// last pump of the connection closes both sockets.
    func pump(_ direction: Direction, _ index: Int, from: Socket, to: Socket) {
        defer { threadEnded() }
        let watched = state.withLock { state in state.tamper.map { $0.connection == index && $0.direction == direction } ?? false }
        var units = LinkUnits()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var failed = false
        reading: while true {
            guard let count = try? chunk.withUnsafeMutableBytes({ try from.receive(into: $0) }), count > 0 else { break }
            record(chunk[..<count], direction, index)
            guard watched else {
                guard sendAll(Array(chunk[..<count]), to: to) else { failed = true; break }
                continue
            }
            units.feed(chunk[..<count])
            while let unit = units.next() {
                guard sendAll(forwarded(unit, direction, index), to: to) else { failed = true; break reading }
            }
        }
        // A unit cut short by the sender's end goes on as it came.
        if !failed, !units.unfinished.isEmpty { failed = !sendAll(units.unfinished, to: to) }
        if failed { from.shutdown(); to.shutdown() } else { to.shutdown(reading: false, writing: true) }
        let last: AsyncSignal<Void>? = state.withLock { state in
            state.links[index].pumps -= 1
            guard state.links[index].pumps == 0 else { return nil }
            state.links[index].recording.endedAt = .now
            state.open.remove(from)
            state.open.remove(to)
            return state.links[index].ended
        }
        if let last {
            from.close()
            to.close()
            last.fulfil(())
        }
    }

    func record(_ bytes: ArraySlice<UInt8>, _ direction: Direction, _ index: Int) {
        state.withLock { state in
            var recording = state.links[index].recording
            state.links[index].recording = Recording()  // no copy of the bytes on append
            if recording.bytes(direction).count + bytes.count > maxRecordedBytes {
                recording.truncated = true
            } else if direction == .fromClient {
                recording.fromClient += bytes
            } else {
                recording.fromServer += bytes
            }
            state.links[index].recording = recording
        }
    }

    /// The bytes to send for `unit`: the unit, or the tamper's change of it. Only frames are
    /// changed, and only the first that fits the tamper (or, for a replay, the one that many
    /// frames after it).
    func forwarded(_ unit: LinkUnits.Unit, _ direction: Direction, _ index: Int) -> [UInt8] {
        guard case .frame(let frame) = unit else { return unit.bytes }
        let (bytes, done): ([UInt8], Tampering?) = state.withLock { state in
            let number = state.links[index].frames[direction.rawValue]
            state.links[index].frames[direction.rawValue] += 1
            guard let tamper = state.tamper, state.tamperings.isEmpty,
                  tamper.connection == index, tamper.direction == direction else { return (frame, nil) }
            func tampering(_ original: [UInt8], _ at: Int, _ sent: [UInt8]) -> Tampering {
                let done = Tampering(connection: index, direction: direction, frame: at, original: original, sent: sent, at: .now)
                state.tamperings.append(done)
                return done
            }
            if let replay = state.replay {
                guard replay.left == 0 else { state.replay?.left -= 1; return (frame, nil) }
                state.replay = nil
                return (frame + replay.frame, tampering(replay.frame, replay.index, frame + replay.frame))
            }
            guard number == tamper.frame else { return (frame, nil) }
            switch tamper.action {
            case .flip(let fromEnd):
                // Never the length: a larger one leaves the receiver waiting for bytes that never come.
                let at = frame.count - fromEnd
                guard fromEnd >= 1, at >= LinkUnits.headerCount else { return (frame, nil) }
                var changed = frame
                changed[at] ^= 0x01
                return (changed, tampering(frame, number, changed))
            case .replay(let laterBy) where laterBy == 0:
                return (frame + frame, tampering(frame, number, frame + frame))
            case .replay(let laterBy):
                state.replay = (frame, number, laterBy - 1)
                return (frame, nil)
            }
        }
        if let done { tampered.fulfil(done) }
        return bytes
    }

    func sendAll(_ bytes: [UInt8], to socket: Socket) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard let sent = try? socket.send(Array(bytes[offset...]), wait: true), sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    func threadEnded() {
        let last = state.withLock { state in
            state.threads -= 1
            return state.threads == 0
        }
        if last { threadsDone.fulfil(()) }
    }

    func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) {
        startThread(named: name, body)
    }
}
