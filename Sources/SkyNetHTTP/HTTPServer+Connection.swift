import SkyNetRuntime
import SkyNetTransport

extension HTTPServer {
    /// Runs on the listener's loop for each new connection: never blocks. Within the caps the
    /// connection is served on an event loop (`HTTPConnection`); over one, a 503 (see
    /// `ClosingConnections`).
    func accept(_ socket: Socket, from peer: String) {
        enum Decision { case serve(Int), refuse(String), drop }
        let address = Socket.address(of: peer)
        let now = ContinuousClock.now
        let decision = state.withLock { state -> Decision in
            if state.stopping { return .drop }
            let cutoff = configuration.silentEviction.map { now - $0 }
            // An address at its cap makes room among its own connections: silent ones from the
            // address a probe comes from (127.0.0.1) cannot keep that probe out.
            if state.perAddress[address, default: 0] >= configuration.maxClientsPerAddress {
                guard let cutoff, state.evictLongestSilent(since: cutoff, from: address) else {
                    return .refuse("\(configuration.maxClientsPerAddress) connections from \(address) are open: close some")
                }
            }
            if state.clients.count >= configuration.maxClients {
                guard let cutoff, state.evictLongestSilent(since: cutoff) else {
                    return .refuse("\(configuration.maxClients) connections are open: try again later")
                }
            }
            let id = state.nextID
            state.nextID += 1
            state.clients[id] = Client(socket: socket, peer: peer, address: address, stage: .readingHead(since: now))
            state.perAddress[address, default: 0] += 1
            state.live += 1
            return .serve(id)
        }
        switch decision {
        case .drop:
            socket.close()
        case .refuse(let detail):
            closing.refuse(socket, with: HTTPResponse.error(.serviceUnavailable, detail: detail).encoded(includingBody: true))
        case .serve(let id):
            do throws(EventLoopError) {
                let loop = try EventLoop.shared.next()
                HTTPConnection(id: id, socket: socket, peer: peer, server: self, loop: loop).start()
            } catch {
                log("\(error)")
                connectionEnded(id, socket)
            }
        }
    }

    /// What a request gets.
    enum Answer {
        /// A plain response (nil: the event stream's head alone) and whether its body goes too.
        case response(HTTPResponse?, body: Bool)
        case eventStream
    }

    /// Routes a request and makes its response, on the blocking pool (a route's body is made
    /// here: it may take a moment, never a loop's).
    func answer(_ request: HTTPRequest) -> Answer {
        guard request.method == "GET" || request.method == "HEAD" else {
            return .response(.error(.methodNotAllowed), body: true)
        }
        let withBody = request.method == "GET"
        // Two Host headers could make the Host check look at one and a proxy at the other.
        guard request.headers.count(where: { $0.name == "host" }) <= 1 else {
            return .response(.error(.badRequest, detail: "more than one Host header"), body: withBody)
        }
        if let refusal = configuration.admit(request) { return .response(refusal, body: withBody) }
        switch routes[request.path] {
        case nil:
            return .response(.error(.notFound), body: withBody)
        case .content(let contentType, let body):
            return .response(HTTPResponse(status: .ok, contentType: contentType, body: body()), body: withBody)
        case .respond(let answer):
            return .response(answer(request), body: withBody)
        case .eventStream where !withBody:
            return .response(nil, body: false)
        case .eventStream:
            return .eventStream
        }
    }

    /// Marks a connection as answering, under the deadline the ticker enforces (set once: the
    /// making of a response and its sending share it); false when it is gone (evicted) or the
    /// server stops.
    func startWriting(_ id: Int) -> Bool {
        state.withLock { state -> Bool in
            guard !state.stopping, let client = state.clients[id] else { return false }
            if case .writing = client.stage { return true }
            state.clients.changeValue(forKey: id) { $0.stage = .writing(deadline: .now + configuration.requestDeadline) }
            return true
        }
    }

    enum StreamStart { case started(EventStreamClient), full, gone }

    /// Makes a connection an event stream that gets every frame published from now on, after
    /// the latest snapshot; `wake` is called when frames wait for it (see `EventStreamClient`).
    func startStream(_ id: Int, wake: @escaping @Sendable () -> Void) -> StreamStart {
        state.withLock { state -> StreamStart in
            guard !state.stopping, state.clients[id] != nil else { return .gone }
            let streams = state.clients.values.count { if case .streaming = $0.stage { true } else { false } }
            guard streams < configuration.maxStreams else { return .full }
            let client = EventStreamClient(first: HTTPResponse.eventStreamHead + (state.snapshot ?? []),
                                           limit: configuration.streamBufferBytes, wake: wake)
            state.clients.changeValue(forKey: id) { $0.stage = .streaming(client) }
            return .started(client)
        }
    }

    /// Forgets a connection and closes its socket (after its entry is gone: until then the
    /// ticker or an eviction may shut it down); the last one after `stop()` wakes it. With
    /// `drainingOn`, its response is out: the socket is closed gracefully there
    /// (`ClosingConnections`), no longer holding a client's slot.
    func connectionEnded(_ id: Int, _ socket: Socket, drainingOn loop: EventLoop? = nil) {
        state.withLock { $0.remove(id) }
        if let loop { closing.close(socket, on: loop) } else { socket.close() }
        let last = state.withLock { state -> Bool in
            state.live -= 1
            return state.stopping && state.live == 0
        }
        if last { connectionsEnded.fulfil(()) }
    }

    /// Tells a connection's failure after the server's prefix.
    func log(_ message: String) {
        configuration.log(configuration.logPrefix + message)
    }
}

extension HTTPServer.State {
    /// Closes the connection that has waited longest for its request head, if it connected
    /// before `cutoff`: its loop sees the end and closes it; its slot is free now. The socket
    /// is shut down here, under the lock, while its connection (which closes it only after
    /// `remove`) cannot have closed it yet.
    /// With `address`, only that address's connections are looked at.
    mutating func evictLongestSilent(since cutoff: ContinuousClock.Instant, from address: String? = nil) -> Bool {
        let silent = clients.compactMap { id, client -> (Int, ContinuousClock.Instant)? in
            guard case .readingHead(let since) = client.stage, since <= cutoff,
                  address.map({ $0 == client.address }) ?? true else { return nil }
            return (id, since)
        }
        guard let (id, _) = silent.min(by: { $0.1 < $1.1 }), let client = clients[id] else { return false }
        client.socket.shutdown(reading: true, writing: true)
        remove(id)
        return true
    }

    /// Forgets a connection and its share of its address's count.
    mutating func remove(_ id: Int) {
        guard let client = clients.removeValue(forKey: id) else { return }
        let left = perAddress[client.address, default: 1] - 1
        perAddress[client.address] = left > 0 ? left : nil
    }
}
