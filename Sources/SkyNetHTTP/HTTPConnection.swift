import SkyNetRuntime
import SkyNetTransport

/// One accepted connection of an `HTTPServer`, served on an event loop: it reads the request
/// head, has the response made on the blocking pool and sends it (then the server's
/// `ClosingConnections` closes it gracefully), or feeds an event stream. No thread waits for
/// the client at any step.
///
/// The server's lock keeps what other threads act on (the stage the ticker and the eviction
/// look at); they act by shutting the socket down, which this connection sees on its loop as
/// the end. It closes the socket only after its entry is gone from the server's state.
///
/// Unchecked: every `var` is touched only on the loop's thread (the watch's handler and the
/// jobs given to `loop.execute`).
final class HTTPConnection: @unchecked Sendable {  // safe without a lock: only the loop's one thread touches it
    private enum Phase {
        case readingHead
        /// The response is being made on the blocking pool; nothing is watched meanwhile.
        case answering
        /// A plain response, then a graceful close.
        case sending(bytes: [UInt8], sent: Int)
        /// What the stream's publisher queued, as it leaves.
        case streaming(EventStreamClient, unsent: [UInt8], sent: Int)
        case ended
    }

    private let id: Int
    private let socket: Socket
    private let peer: String
    private let server: HTTPServer
    private let loop: EventLoop
    private var phase = Phase.readingHead
    private var parser = HTTPRequestParser()
    private var watch: EventLoop.Watch?
    /// The request deadline, while the head is read.
    private var headTicket: TimerTicket?
    /// Bytes a stream's client sent after its request (it has nothing to say), and whether it
    /// ended its side (some clients do once their request is out: the stream goes on).
    private var ignored = 0
    private var clientHalfClosed = false
    /// When a stream's client last took a byte, and the check of its stall while bytes wait.
    private var streamProgress = ContinuousClock.now
    private var stallTicket: TimerTicket?

    init(id: Int, socket: Socket, peer: String, server: HTTPServer, loop: EventLoop) {
        self.id = id
        self.socket = socket
        self.peer = peer
        self.server = server
        self.loop = loop
    }

    /// Starts reading on the loop; callable from any thread.
    func start() {
        let deadline = ContinuousClock.now + server.configuration.requestDeadline
        loop.execute { [self] in
            do {
                watch = try loop.watch(socket.descriptor, for: .readable) { [self] readiness in ready(readiness) }
            } catch {
                server.log("\(error)")
                return end()
            }
            headTicket = DeadlineTimer.shared.schedule(at: deadline) { [self] in
                loop.execute { [self] in
                    // A slowloris client: 408, and its slot is free once the response is out.
                    if case .readingHead = phase { respond(.error(.requestTimeout), body: true) }
                }
            }
        }
    }

    private func ready(_ readiness: Readiness) {
        switch phase {
        case .readingHead:
            readHead()
        case .sending:
            sendResponse()
        case .streaming:
            // Both ways closed (the client reset, or the server shut it down): over.
            if readiness.hungUp { return end() }
            if readiness.readable { readWhileStreaming() }
            if readiness.writable { streamMore() }
        case .answering, .ended:
            break
        }
    }

    /// Reads what the client sent (a few reads at most: the watch is level-triggered, so the
    /// rest comes on the loop's next turn) until the head is whole or refused.
    private func readHead() {
        let buffer = loop.scratch.bytes
        for _ in 0..<4 {
            let count: Int
            do throws(SocketError) {
                guard let read = try socket.receiveNow(into: buffer) else { return }
                count = read
            } catch {
                server.log("\(error)")
                return end()
            }
            guard count > 0 else { return end() }  // the client left, or the server shut the socket
            switch parser.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count])) {
            case .needMore:
                continue
            case .refused(let status):
                return respond(.error(status), body: true)
            case .complete(var request):
                request.peer = peer
                return answer(request)
            }
        }
    }

    /// Has the route make its response on the blocking pool (a route may render all of a
    /// process's metrics): the loop's other connections never wait for it.
    private func answer(_ request: HTTPRequest) {
        cancelHeadDeadline()
        // No longer silent: an eviction passes it by, and the ticker's deadline bounds it.
        guard server.startWriting(id) else { return end() }
        phase = .answering
        waitFor([])
        BlockingPool.shared.execute { [self] in
            let answer = server.answer(request)
            loop.execute { [self] in
                guard case .answering = phase else { return }
                switch answer {
                case .response(let response, let body): respond(response, body: body)
                case .eventStream: startStream()
                }
            }
        }
    }

    /// Sends a plain response (nil: the event-stream head alone, for HEAD) within the request
    /// deadline (the server's ticker cuts it after), then closes gracefully.
    private func respond(_ response: HTTPResponse?, body: Bool) {
        cancelHeadDeadline()
        guard server.startWriting(id) else { return end() }  // evicted, or the server stops
        phase = .sending(bytes: response?.encoded(includingBody: body) ?? HTTPResponse.eventStreamHead, sent: 0)
        sendResponse()
    }

    private func sendResponse() {
        guard case .sending(let bytes, var sent) = phase else { return }
        do throws(SocketError) {
            guard try sendNow(bytes, from: &sent) else {
                phase = .sending(bytes: bytes, sent: sent)
                return waitFor(.writable)
            }
        } catch {
            return end()
        }
        end(responseSent: true)
    }

    private func startStream() {
        let wake: @Sendable () -> Void = { [self] in loop.execute { [self] in streamMore() } }
        switch server.startStream(id, wake: wake) {
        case .gone:
            end()
        case .full:
            let detail = "\(server.configuration.maxStreams) event streams are open: try again later"
            respond(.error(.serviceUnavailable, detail: detail), body: true)
        case .started(let client):
            phase = .streaming(client, unsent: [], sent: 0)
            streamProgress = .now
            streamMore()
        }
    }

    /// Sends what the publisher queued until the socket's buffer is full (then waits for room)
    /// or nothing is left (then waits for the publisher's wake-up).
    private func streamMore() {
        guard case .streaming(let client, var unsent, var sent) = phase else { return }
        while true {
            if sent == unsent.count {
                switch client.takeNow() {
                case .bytes(let bytes):
                    unsent = bytes
                    sent = 0
                case .nothing:
                    phase = .streaming(client, unsent: [], sent: 0)
                    return waitFor(clientHalfClosed ? [] : .readable)
                case .over:
                    return end()
                }
            }
            let before = sent
            do throws(SocketError) {
                let whole = try sendNow(unsent, from: &sent)
                if sent > before { streamProgress = .now }
                guard whole else {
                    phase = .streaming(client, unsent: unsent, sent: sent)
                    watchStall()
                    return waitFor(clientHalfClosed ? .writable : [.readable, .writable])
                }
            } catch {
                return end()
            }
        }
    }

    /// While bytes wait for a stream's client, checks that it takes some within the stall
    /// deadline; one that takes none is cut (its slot is for a browser that reads).
    private func watchStall() {
        guard stallTicket == nil else { return }
        let deadline = streamProgress + server.configuration.streamStallDeadline
        stallTicket = DeadlineTimer.shared.schedule(at: deadline) { [self] in
            loop.execute { [self] in
                stallTicket = nil
                guard case .streaming(_, let unsent, let sent) = phase, sent < unsent.count else { return }
                if ContinuousClock.now - streamProgress >= server.configuration.streamStallDeadline {
                    server.log("an event stream's client took nothing for \(server.configuration.streamStallDeadline): cut")
                    return end()
                }
                watchStall()
            }
        }
    }

    /// A stream's client only listens: a failure ends the stream, and so do more than 64 KiB
    /// from it. Its end of sending does not: from then on the stream is no longer watched for
    /// reading (the end would be told again and again), and a client gone for good shows as a
    /// send that fails (a keepalive at the latest) or a stall.
    private func readWhileStreaming() {
        guard !clientHalfClosed else { return }
        do throws(SocketError) {
            guard let count = try socket.receiveNow(into: loop.scratch.bytes) else { return }
            ignored += count
            if ignored > 64 * 1024 { return end() }
            if count == 0 {
                clientHalfClosed = true
                guard case .streaming(_, let unsent, let sent) = phase else { return }
                waitFor(sent < unsent.count ? .writable : [])
            }
        } catch {
            end()
        }
    }

    /// Waits on the socket for `interest` from now on; a socket the loop can no longer watch
    /// (out of memory or of the kernel's watches) ends the connection rather than hang it.
    private func waitFor(_ interest: Interest) {
        guard let watch, !watch.change(to: interest) else { return }
        server.log("cannot wait on a connection any more: closed")
        end()
    }

    /// Sends from `sent` on without waiting; false when the socket's buffer is full first.
    private func sendNow(_ bytes: [UInt8], from sent: inout Int) throws(SocketError) -> Bool {
        while sent < bytes.count {
            let count = try bytes[sent...].withUnsafeBytes { raw in
                Result { () throws(SocketError) in try socket.send(raw, wait: false) }
            }.get()
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    private func cancelHeadDeadline() {
        if let headTicket { DeadlineTimer.shared.cancel(headTicket) }
        headTicket = nil
    }

    /// Ends the connection: its socket is closed now, or, once its response is out, closed
    /// gracefully by the server's `ClosingConnections`.
    private func end(responseSent: Bool = false) {
        if case .ended = phase { return }
        if case .streaming(let client, _, _) = phase { client.close() }
        phase = .ended
        watch?.cancel()
        watch = nil
        cancelHeadDeadline()
        if let stallTicket { DeadlineTimer.shared.cancel(stallTicket) }
        stallTicket = nil
        server.connectionEnded(id, socket, drainingOn: responseSent ? loop : nil)
    }
}
