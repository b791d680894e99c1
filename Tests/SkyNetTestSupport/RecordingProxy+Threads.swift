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

    /// Copies `from` to `to` line by line (recording, tampering), until `from` ends or a send
    /// fails; then half-closes `to` (or cuts both on a failure). The last pump of the connection
    /// closes both sockets.
    func pump(_ direction: Direction, _ index: Int, from: Socket, to: Socket) {
        defer { threadEnded() }
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var failed = false
        reading: while true {
            guard let count = try? chunk.withUnsafeMutableBytes({ try from.receive(into: $0) }), count > 0 else { break }
            record(chunk[..<count], direction, index)
            pending += chunk[..<count]
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = Array(pending[...newline])
                pending.removeFirst(newline + 1)
                guard sendAll(forwarded(line, direction, index), to: to) else { failed = true; break reading }
            }
            if pending.count > Self.maxLineBytes {
                guard sendAll(pending, to: to) else { failed = true; break }
                pending.removeAll()
            }
        }
        if !failed, !pending.isEmpty { failed = !sendAll(pending, to: to) }
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

    /// The bytes to send for `line` (newline included): the line, or the tamper's change of it.
    func forwarded(_ line: [UInt8], _ direction: Direction, _ index: Int) -> [UInt8] {
        let (bytes, done): ([UInt8], Tampering?) = state.withLock { state in
            let lineIndex = state.links[index].lines[direction.rawValue]
            state.links[index].lines[direction.rawValue] += 1
            func tampering(_ original: [UInt8], _ at: Int, _ sent: [UInt8]) -> Tampering {
                let done = Tampering(connection: index, direction: direction, lineIndex: at, original: original, sent: sent, at: .now)
                state.tamperings.append(done)
                return done
            }
            if let replay = state.replay, state.tamperings.isEmpty, let tamper = state.tamper,
               tamper.connection == index, tamper.direction == direction {
                guard replay.left == 0 else { state.replay?.left -= 1; return (line, nil) }
                state.replay = nil
                return (line + replay.line, tampering(replay.line, replay.index, line + replay.line))
            }
            guard let tamper = state.tamper, state.replay == nil, state.tamperings.isEmpty,
                  tamper.connection == index, tamper.direction == direction, lineIndex >= tamper.handshakeLines,
                  tamper.matching.map({ String(decoding: line, as: UTF8.self).contains($0) }) ?? true
            else { return (line, nil) }
            state.matched += 1
            guard state.matched == tamper.occurrence + 1 else { return (line, nil) }
            switch tamper.action {
            case .flip(let fromEnd):
                var changed = line
                let at = line.count - 1 - fromEnd
                guard changed.indices.contains(at) else { return (line, nil) }
                changed[at] ^= 0x01
                return (changed, tampering(line, lineIndex, changed))
            case .replay(let laterBy) where laterBy == 0:
                return (line + line, tampering(line, lineIndex, line + line))
            case .replay(let laterBy):
                state.replay = (line, lineIndex, laterBy - 1)
                return (line, nil)
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
