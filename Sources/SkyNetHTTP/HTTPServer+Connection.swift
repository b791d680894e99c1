import SkyNetRuntime
import SkyNetTransport

extension HTTPServer {
    /// Runs on the accept thread for each new connection: never blocks. Within the caps the
    /// connection gets a thread of its own; over one, a 503 (see `RefusedConnections`).
    func accept(_ socket: Socket, from peer: String) {
        enum Decision { case serve(Int), refuse(String), drop }
        let address = Socket.address(of: peer)
        let now = ContinuousClock.now
        let decision = state.withLock { state -> Decision in
            if state.stopping { return .drop }
            if state.perAddress[address, default: 0] >= configuration.maxClientsPerAddress {
                return .refuse("\(configuration.maxClientsPerAddress) connections from \(address) are open: close some")
            }
            if state.clients.count >= configuration.maxClients {
                guard let silent = configuration.silentEviction, state.evictLongestSilent(since: now - silent) else {
                    return .refuse("\(configuration.maxClients) connections are open: try again later")
                }
            }
            let id = state.nextID
            state.nextID += 1
            state.clients[id] = Client(socket: socket, peer: peer, address: address, stage: .readingHead(since: now))
            state.perAddress[address, default: 0] += 1
            state.liveThreads += 1
            return .serve(id)
        }
        switch decision {
        case .drop:
            socket.close()
        case .refuse(let detail):
            refused.refuse(socket, with: HTTPResponse.error(.serviceUnavailable, detail: detail).encoded(includingBody: true))
        case .serve(let id):
            startThread(named: "skynet-http") { [self] in
                serve(id, socket, peer)
                state.withLock { $0.remove(id) }
                socket.close()
                threadEnded()
            }
        }
    }

    /// Reads one request head within the deadline and answers it.
    private func serve(_ id: Int, _ socket: Socket, _ peer: String) {
        let deadline = ContinuousClock.now + configuration.requestDeadline
        var parser = HTTPRequestParser()
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let left = deadline - ContinuousClock.now
            guard left >= .milliseconds(1) else { return respond(id, socket, .error(.requestTimeout), body: true) }
            socket.setReceiveTimeout(left)
            let count: Int
            do {
                count = try socket.receive(into: chunk)
            } catch {
                if error.code == EAGAIN || error.code == EWOULDBLOCK {
                    return respond(id, socket, .error(.requestTimeout), body: true)
                }
                return configuration.log(configuration.logPrefix + "\(error)")
            }
            guard count > 0 else { return }  // the client left, or stop() shut the socket
            switch parser.feed(UnsafeRawBufferPointer(rebasing: chunk[..<count])) {
            case .needMore: continue
            case .refused(let status): return respond(id, socket, .error(status), body: true)
            case .complete(var request):
                request.peer = peer
                return route(request, id, socket)
            }
        }
    }

    private func route(_ request: HTTPRequest, _ id: Int, _ socket: Socket) {
        guard request.method == "GET" || request.method == "HEAD" else {
            return respond(id, socket, .error(.methodNotAllowed), body: true)
        }
        let withBody = request.method == "GET"
        // Two Host headers could make the Host check look at one and a proxy at the other.
        guard request.headers.count(where: { $0.name == "host" }) <= 1 else {
            return respond(id, socket, .error(.badRequest, detail: "more than one Host header"), body: withBody)
        }
        if let refusal = configuration.admit(request) { return respond(id, socket, refusal, body: withBody) }
        switch routes[request.path] {
        case nil:
            respond(id, socket, .error(.notFound), body: withBody)
        case .content(let contentType, let body):
            respond(id, socket, HTTPResponse(status: .ok, contentType: contentType, body: body()), body: withBody)
        case .respond(let answer):
            respond(id, socket, answer(request), body: withBody)
        case .eventStream where !withBody:
            respond(id, socket, nil, body: false)
        case .eventStream:
            stream(id, socket)
        }
    }

    /// Sends a plain response (nil: the event-stream head alone, for HEAD) within the deadline,
    /// then closes gracefully.
    private func respond(_ id: Int, _ socket: Socket, _ response: HTTPResponse?, body: Bool) {
        let proceed = state.withLock { state -> Bool in
            guard !state.stopping, state.clients[id] != nil else { return false }
            state.clients[id]?.stage = .writing(deadline: .now + configuration.requestDeadline)
            return true
        }
        guard proceed else { return }
        send(response?.encoded(includingBody: body) ?? HTTPResponse.eventStreamHead, to: socket)
        closeGracefully(socket)
    }

    /// Feeds the client every frame published from now on, after the latest snapshot.
    private func stream(_ id: Int, _ socket: Socket) {
        enum Start { case stream(EventStreamClient), full, gone }
        let start = state.withLock { state -> Start in
            guard !state.stopping, state.clients[id] != nil else { return .gone }
            let streams = state.clients.values.count { if case .streaming = $0.stage { true } else { false } }
            guard streams < configuration.maxStreams else { return .full }
            let client = EventStreamClient(first: HTTPResponse.eventStreamHead + (state.snapshot ?? []),
                                           limit: configuration.streamBufferBytes)
            state.clients[id]?.stage = .streaming(client)
            return .stream(client)
        }
        let client: EventStreamClient
        switch start {
        case .gone: return
        case .full:
            let detail = "\(configuration.maxStreams) event streams are open: try again later"
            return respond(id, socket, .error(.serviceUnavailable, detail: detail), body: true)
        case .stream(let started): client = started
        }
        // A send blocks while the browser does not read: only this thread waits; the
        // publisher keeps queueing into the bounded buffer, which skips when full.
        while let bytes = client.take(), send(bytes, to: socket) {}
        client.close()
    }

    /// Sends every byte, blocking this thread; false when the connection failed.
    @discardableResult
    func send(_ bytes: [UInt8], to socket: Socket) -> Bool {
        var sent = 0
        while sent < bytes.count {
            guard let count = try? bytes[sent...].withUnsafeBytes({ try socket.send($0, wait: true) }), count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// Ends our side, then reads (at most 64 KiB, for at most a second in all) what the client
    /// still sends, so that closing with unread bytes does not reset the connection and lose
    /// our response. The bound is on the whole drain: a client trickling a byte at a time
    /// cannot keep this thread (and so `stop()`) waiting.
    func closeGracefully(_ socket: Socket) {
        socket.shutdown(reading: false, writing: true)
        let deadline = ContinuousClock.now + .seconds(1)
        var drained = 0
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { chunk.deallocate() }
        while drained < 64 * 1024 {
            let left = deadline - ContinuousClock.now
            guard left >= .milliseconds(1) else { return }
            socket.setReceiveTimeout(left)
            guard let count = try? socket.receive(into: chunk), count > 0 else { return }
            drained += count
        }
    }
}

extension HTTPServer.State {
    /// Forgets a connection and its share of its address's count.
    /// Closes the connection that has waited longest for its request head, if it connected
    /// before `cutoff`: its thread sees the end and leaves; its slot is free now. The socket
    /// is shut down here, under the lock, while its thread (which closes it only after
    /// `remove`) cannot have closed it yet.
    mutating func evictLongestSilent(since cutoff: ContinuousClock.Instant) -> Bool {
        let silent = clients.compactMap { id, client -> (Int, ContinuousClock.Instant)? in
            guard case .readingHead(let since) = client.stage, since <= cutoff else { return nil }
            return (id, since)
        }
        guard let (id, _) = silent.min(by: { $0.1 < $1.1 }), let client = clients[id] else { return false }
        client.socket.shutdown(reading: true, writing: true)
        remove(id)
        return true
    }

    mutating func remove(_ id: Int) {
        guard let client = clients.removeValue(forKey: id) else { return }
        let left = perAddress[client.address, default: 1] - 1
        perAddress[client.address] = left > 0 ? left : nil
    }
}
