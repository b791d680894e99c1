import SkyNetRuntime
import SkyNetTransport

/// What a path serves. Nothing comes from the file system: the caller registers every route.
package enum HTTPRoute: Sendable {
    /// A body made when the request comes, on the blocking pool (`BlockingPool.shared`: keep
    /// it short, it shares those few threads).
    case content(contentType: String, body: @Sendable () -> [UInt8])
    /// A response made from the request (its query, its headers), on the blocking pool too.
    case respond(@Sendable (HTTPRequest) -> HTTPResponse)
    /// The Server-Sent Events stream fed by `HTTPServer.publish(event:data:snapshot:)`.
    case eventStream

    /// A fixed body.
    package static func fixed(contentType: String, _ body: [UInt8]) -> HTTPRoute {
        .content(contentType: contentType) { body }
    }
}

/// Why the server refused a call.
package enum HTTPServerError: Error, Equatable, CustomStringConvertible {
    case invalidConfiguration(String)
    case frameTooLarge(bytes: Int, limit: Int)

    package var description: String {
        switch self {
        case .invalidConfiguration(let reason): "HTTP server: \(reason)"
        case .frameTooLarge(let bytes, let limit): "event frame of \(bytes) bytes is over the limit of \(limit)"
        }
    }
}

/// A small HTTP/1.1 server for the dashboard and a node's `/metrics`: GET and HEAD on a fixed
/// table of in-memory routes, and one Server-Sent Events stream.
///
/// Contract:
/// - Connections are served on the process's event loops (`HTTPConnection`): no thread is
///   started per connection or per request, and none waits for a slow client. Each carries
///   one request: a plain response ends with `Connection: close`. Responses are made on the
///   blocking pool, so a loop's other descriptors never wait for a route.
/// - Other methods → 405 with `Allow: GET, HEAD`; unknown paths → 404; a malformed request
///   line or a version other than HTTP/1.0 or 1.1 → 400; a request line over 8 KiB → 414;
///   headers over 16 KiB or 100 lines → 431 (see `HTTPRequestParser`).
/// - The whole head must arrive within `requestDeadline` (a slowloris client gets 408 and is
///   closed), and a plain response must be sent within it too (else the connection is cut).
/// - At most `maxClients` connections at once, streams included, and `maxClientsPerAddress`
///   from one client address: one more gets 503 and is closed, unless a connection silent for
///   `silentEviction` (from that address, when it is the address's cap that is reached) makes
///   room for it; at most `maxStreams` of them event streams. The 503 is sent without waiting.
/// - Once its response is out (an answer or a 503), a connection is no longer a client: its
///   slot is free, and it is closed once the client has closed its side or `closeDeadline`
///   has passed, whichever comes first (at most `maxClosing` of them at once: beyond that one
///   is closed at once). So a flood costs no thread and no descriptor beyond those bounds.
/// - Event streams: see `publish(event:data:snapshot:)`; a `: keepalive` comment is sent every
///   `keepaliveInterval`; a stream whose client takes no byte for `streamStallDeadline` while
///   bytes wait is cut (a browser that reads, even slowly, never is).
/// - `stop(grace:)` closes the listener and every connection and waits until they are closed.
package final class HTTPServer: Sendable {
    /// Limits and timings; the defaults are what the dashboard uses.
    package struct Configuration: Sendable {
        package var host = "127.0.0.1"
        package var port = 0
        package var maxClients = 256
        /// Connections from one client address (its host, whatever the port): one address
        /// holding its share leaves the other slots to everyone else.
        package var maxClientsPerAddress = 32
        /// Connections whose response is out, waiting for the client to close.
        package var maxClosing = 1024
        /// How long a connection whose response is out may wait for the client to close.
        package var closeDeadline: Duration = .seconds(1)
        package var requestDeadline: Duration = .seconds(10)
        /// When every slot is taken, the connection that has waited longest without a whole
        /// request head, if for at least this long, is closed to make room (nil: never). Clients
        /// that connect and say nothing, however often they reconnect, cannot starve a readiness
        /// probe (`/healthz`) or a scrape: a real client sends its request at once, and the one
        /// closed is always the oldest. (A threshold of 1 s was beaten by clients that reconnect
        /// every half second.)
        package var silentEviction: Duration? = .zero
        /// Event streams open at once: the other slots stay for plain requests (a stream is
        /// never evicted).
        package var maxStreams = 128
        /// Bytes queued per event-stream client before it skips to the latest snapshot.
        package var streamBufferBytes = 1 << 20
        /// The largest frame `publish` takes (at most half the stream buffer).
        package var maxFrameBytes = 256 * 1024
        package var keepaliveInterval: Duration = .seconds(15)
        /// How long an event stream may take no byte while bytes wait for it.
        package var streamStallDeadline: Duration = .seconds(30)
        /// Hears a connection's failure (never the token: requests are not logged), after
        /// `logPrefix`.
        package var log: @Sendable (String) -> Void = { _ in }
        /// What each line `log` hears begins with: the server's name in its process's log
        /// (`dashboard: `; a node's metrics server has a name of its own).
        package var logPrefix = ""
        /// Looks at every GET or HEAD before it is routed: a response refuses it (a wrong
        /// `Host`, no session), nil lets it through.
        package var admit: @Sendable (HTTPRequest) -> HTTPResponse? = { _ in nil }

        package init() {}

        func validate() throws(HTTPServerError) {
            guard maxClients >= 1, maxClientsPerAddress >= 1, maxClosing >= 1, maxStreams >= 1 else {
                throw .invalidConfiguration("maxClients, maxClientsPerAddress, maxClosing and maxStreams must be at least 1")
            }
            guard silentEviction.map({ $0 >= .zero }) ?? true else { throw .invalidConfiguration("the silent eviction must not be negative") }
            guard closeDeadline > .zero, streamStallDeadline > .zero else {
                throw .invalidConfiguration("the close deadline and the stream stall deadline must be positive")
            }
            guard requestDeadline > .zero, keepaliveInterval > .zero else {
                throw .invalidConfiguration("the request deadline and the keepalive interval must be positive")
            }
            guard maxFrameBytes >= 1, streamBufferBytes >= 2 * maxFrameBytes else {
                throw .invalidConfiguration("the stream buffer must hold at least two of the largest frames")
            }
        }
    }

    /// Where a connection is in its life; the ticker cuts `.writing` ones past their deadline
    /// (a response being made counts as writing).
    enum Stage {
        case readingHead(since: ContinuousClock.Instant)
        case writing(deadline: ContinuousClock.Instant)
        case streaming(EventStreamClient)
    }

    struct Client {
        let socket: Socket
        /// Its address, `host:port`.
        let peer: String
        /// The host part of `peer`: what `maxClientsPerAddress` counts.
        let address: String
        var stage: Stage
    }

    /// Everything that changes together, behind one lock.
    struct State {
        var stopping = false
        var clients: [Int: Client] = [:]
        /// Open connections per client address (entries at zero are removed).
        var perAddress: [String: Int] = [:]
        var nextID = 0
        /// Connections not closed yet (evicted ones included); `stop()` waits for zero.
        var live = 0
        /// The latest snapshot frame: what a new or lagging stream client gets first.
        var snapshot: [UInt8]?
        var lastKeepalive = ContinuousClock.now
    }

    package let configuration: Configuration
    let routes: [String: HTTPRoute]
    let listener: Listener
    let state = Guarded(State())
    let connectionsEnded = AsyncSignal<Void>()
    let closing: ClosingConnections

    /// The bound address (the real port when 0 was asked for).
    package var host: String { listener.host }
    package var port: Int { listener.port }

    /// Binds, starts accepting and returns once connections are accepted. Routes map a path
    /// (without query) to what it serves.
    package static func start(_ configuration: Configuration = Configuration(),
                             routes: [String: HTTPRoute]) async throws -> HTTPServer {
        try configuration.validate()
        Socket.ignoreBrokenPipes()
        let listener = try await Listener.bind(host: configuration.host, port: configuration.port)
        let server = HTTPServer(configuration: configuration, routes: routes, listener: listener)
        server.scheduleTick()
        do {
            try listener.start(onAccept: { [server] socket, peer in server.accept(socket, from: peer) },
                               onFailure: { [configuration] error in configuration.log(configuration.logPrefix + "\(error)") })
        } catch {
            await server.stop()  // its tick
            throw error
        }
        return server
    }

    private init(configuration: Configuration, routes: [String: HTTPRoute], listener: Listener) {
        self.configuration = configuration
        self.routes = routes
        self.listener = listener
        closing = ClosingConnections(capacity: configuration.maxClosing, deadline: configuration.closeDeadline)
    }

    /// Sends a frame `event: NAME\ndata: DATA\n\n` to every event-stream client, in the order
    /// of the calls. Callable from any thread or task; it never waits for a client. With
    /// `snapshot: true` the frame is also kept as the latest state: a new client gets it first,
    /// and a client whose buffer would overflow skips its backlog and gets it instead (see
    /// `EventStreamClient`). Throws when the encoded frame is over `maxFrameBytes`.
    package func publish(event: String, data: String, snapshot: Bool = false) throws(HTTPServerError) {
        let frame = EventFrame.encode(event: event, data: data)
        guard frame.count <= configuration.maxFrameBytes else {
            throw .frameTooLarge(bytes: frame.count, limit: configuration.maxFrameBytes)
        }
        state.withLock { state in
            if snapshot { state.snapshot = frame }
            for client in state.clients.values {
                if case .streaming(let stream) = client.stage { stream.enqueue(frame, snapshot: state.snapshot) }
            }
        }
    }

    /// Stops accepting, closes every connection and waits until each is closed.
    /// With a `grace`, event streams first get what was published before the call (the final
    /// state of a scan), for up to that long, before their connections are cut.
    package func stop(grace: Duration = .zero) async {
        let streams = state.withLock { state -> Bool in
            state.stopping = true
            var any = false
            for client in state.clients.values {
                if case .streaming(let stream) = client.stage { stream.finish(); any = true }
            }
            return any
        }
        listener.stop()
        await listener.stopped.value
        closing.stop()
        await closing.closed.value
        if streams, grace > .zero {
            _ = await waitUntilClients(atMost: 0, timeout: grace)
        }
        let idle = state.withLock { state -> Bool in
            for client in state.clients.values {
                client.socket.shutdown()
                if case .streaming(let stream) = client.stage { stream.close() }
            }
            return state.live == 0
        }
        if idle { connectionsEnded.fulfil(()) }
        await connectionsEnded.value
    }

    /// Connections open now (streams included).
    package var clientCount: Int { state.withLock { $0.clients.count } }
}
