import Distributed
import SkyNetRuntime
import SkyNetWire

/// How the calls a task makes are bounded and retried: `ClusterActorSystem.withCallOptions`.
public struct CallOptions: Sendable {
    /// The most each call may take, from when it is made (waiting for room on its link
    /// included); nil: the system's `callTimeout`. A longer one than that is cut to it.
    public var timeout: Duration?
    /// How many times a call whose link ended while it was in flight is made again. Calls are
    /// at most once by default (0): such a call may have run, and only the caller knows
    /// whether running it twice is harmless.
    public var retries: Int

    /// Options for the calls made within `withCallOptions`.
    public init(timeout: Duration? = nil, retries: Int = 0) {
        self.timeout = timeout
        self.retries = max(0, retries)
    }
}

extension ClusterActorSystem {
    /// The options of the calls the current task makes.
    @TaskLocal static var callOptions = CallOptions()

    /// Runs `body` with `options` for every distributed call it makes (and the tasks it
    /// starts make): a shorter deadline, or retries.
    public static func withCallOptions<T>(_ options: CallOptions, _ body: () async throws -> T) async rethrows -> T {
        try await $callOptions.withValue(options) { try await body() }
    }

    /// An empty record of one call.
    public func makeInvocationEncoder() -> ClusterInvocationEncoder { ClusterInvocationEncoder() }

    /// Sends a call to the system that hosts `actor` and returns its decoded result.
    public func remoteCall<Act: DistributedActor, Err: Error, Res: Codable>(
        on actor: Act, target: RemoteCallTarget, invocation: inout ClusterInvocationEncoder,
        throwing: Err.Type, returning: Res.Type
    ) async throws -> Res where Act.ID == ClusterActorID {
        guard let value = try await send(to: actor.id, target, invocation) else {
            throw ClusterActorSystemError.badValue("the method returned nothing where \(Res.self) was expected")
        }
        do {
            return try CodableJSON.decode(Res.self, from: value, userInfo: [.actorSystemKey: self])
        } catch {
            throw ClusterActorSystemError.badValue("the result: \(error)")
        }
    }

    /// Sends a call of a method that returns nothing to the system that hosts `actor`.
    public func remoteCallVoid<Act: DistributedActor, Err: Error>(
        on actor: Act, target: RemoteCallTarget, invocation: inout ClusterInvocationEncoder, throwing: Err.Type
    ) async throws where Act.ID == ClusterActorID {
        _ = try await send(to: actor.id, target, invocation)
    }

    /// Sends one call to the system that hosts `id`, again as its options allow when its link
    /// ended; returns the method's value (nil: none).
    private func send(to id: ClusterActorID, _ target: RemoteCallTarget, _ invocation: ClusterInvocationEncoder) async throws -> JSONValue? {
        let options = Self.callOptions
        let timeout = min(options.timeout ?? callTimeout, callTimeout)
        let deadline = clock.now + timeout
        var attempt = 0
        while true {
            let actor = try await route(id, until: deadline)
            let call = ActorCall(actor: actor, target: target.identifier, generics: invocation.generics, arguments: invocation.arguments)
            do {
                return try await send(call, deadline: deadline, timeout: timeout)
            } catch ClusterActorSystemError.linkLost where attempt < options.retries && clock.now < deadline {
                attempt += 1
            } catch ClusterActorSystemError.noRoute where clock.now < deadline && isRestarting(id, from: actor) {
                continue  // it never went out: the actor is being made again, or was
            }
        }
    }

    /// Whether the actor `id` is being made again, or was, since calls reached it at `actor`.
    private func isRestarting(_ id: ClusterActorID, from actor: ClusterActorID) -> Bool {
        state.withLock { state in
            state.restarting[id] != nil || state.restartable[id].map { $0.current != actor } ?? false
        }
    }

    /// One call, within `deadline`: it waits its turn on the link, then is sent.
    private func send(_ call: ActorCall, deadline: ContinuousClock.Instant, timeout: Duration) async throws -> JSONValue? {
        let reply = try await onLink(call.system, deadline: deadline, timeout: timeout) { channel in
            try await channel.call(call, timeout: max(.zero, deadline - self.clock.now))
        }
        switch reply {
        case .returned(let value): return value
        case .threw(let type, let message): throw ClusterActorSystemError.remote(type: type, message: message)
        case .refused(let refusal): throw refusal
        }
    }

    /// Runs `body` (a call or a spawn) with the link to `system` once it has a place among the
    /// link's calls in flight, within `deadline`. What `body` throws becomes what it means for
    /// the caller: a link that ended is `linkLost` (the request may have run), a `TimeoutError`
    /// is `deadline`.
    func onLink<T>(_ target: String, deadline: ContinuousClock.Instant, timeout: Duration,
                   _ body: (any ActorCallChannel) async throws -> T) async throws -> T {
        // The system's own link, else one that routes others' calls.
        let system = state.withLock { state in
            state.links[target] != nil ? target : state.links.first { $0.value.routesOthers }?.key
        } ?? target
        let (link, node) = try await enter(system, until: deadline, timeout: timeout)
        defer { leave(system, link: link) }
        let channel = state.withLock { $0.links[system].flatMap { $0.number == link ? $0.channel : nil } }
        guard let channel else { throw ClusterActorSystemError.noRoute(system: system) }
        do {
            return try await body(channel)
        } catch let error as ClusterActorSystemError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch is TimeoutError {
            throw ClusterActorSystemError.deadline(timeout)
        } catch {
            throw ClusterActorSystemError.linkLost(node: node, reason: "\(error)")
        }
    }

    /// From now on, a call that arrives here for an actor of a system linked to this one is
    /// passed on to it: a node's actor can call an actor of another node whose reference it
    /// was given, through the program that links both (nodes link only to their callers).
    package func relayCalls() {
        state.withLock { $0.relays = true }
    }

    /// Passes `call` on to the linked system that hosts its actor, within this system's call
    /// deadline. A call that may have run there and did not answer (its link ended, its
    /// deadline passed) is told as thrown: the caller must not take it for one that never ran.
    func relay(_ call: ActorCall) async -> ActorReply {
        let deadline = clock.now + callTimeout
        do {
            return try await onLink(call.system, deadline: deadline, timeout: callTimeout) { channel in
                try await channel.call(call, timeout: max(.zero, deadline - self.clock.now))
            }
        } catch let error as ClusterActorSystemError {
            switch error {
            case .linkLost, .deadline: return .threw(type: "ClusterActorSystemError", message: error.description)
            default: return .refused(error)
            }
        } catch {
            return .threw(type: String(describing: type(of: error)), message: "\(error)")
        }
    }

    /// Takes a place among the calls in flight on the link to `system` (at most
    /// `ActorCall.maxCallsPerConnection`), waiting in turn for one until `deadline`; returns
    /// the link's number and node. Cancelling the caller ends the wait.
    private func enter(_ system: String, until deadline: ContinuousClock.Instant, timeout: Duration) async throws -> (Int, String) {
        // A place free and nobody waiting: taken at once, without suspending the caller (a
        // continuation resumed at once would still send it back through the executor's queue).
        let (place, ticket) = state.withLock { state -> ((Int, String)?, Int) in
            if let index = state.links.index(forKey: system), let place = state.links.values[index].takePlace() {
                return (place, 0)
            }
            state.lastWaiter += 1
            return (nil, state.lastWaiter)
        }
        if let place {
            guard !Task.isCancelled else {
                leave(system, link: place.0)
                throw CancellationError()
            }
            return place
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Int, String), any Error>) in
                // The link is changed where it is stored: a copy would copy its waiting calls.
                let outcome = state.withLock { state -> Result<(Int, String), any Error>? in
                    guard let index = state.links.index(forKey: system) else { return .failure(ClusterActorSystemError.noRoute(system: system)) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if let place = state.links.values[index].takePlace() { return .success(place) }
                    let timer = clock.schedule(at: deadline) { [self] in
                        fail(waiter: ticket, on: system, with: ClusterActorSystemError.deadline(timeout))
                    }
                    state.links.values[index].waiting[ticket] = Waiter(continuation: continuation, timer: timer)
                    state.links.values[index].turns.append(ticket)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            fail(waiter: ticket, on: system, with: CancellationError())
        }
    }

    /// Ends the wait of `ticket` with `error`, if it still waits.
    private func fail(waiter ticket: Int, on system: String, with error: any Error) {
        let waiter = state.withLock { state -> Waiter? in
            // Its turn stays in `turns`, skipped when it comes.
            state.links[system]?.waiting.removeValue(forKey: ticket)
        }
        guard let waiter else { return }
        clock.cancel(waiter.timer)
        waiter.continuation.resume(throwing: error)
    }

    /// A call on the link `number` to `system` ended: the next waiting call takes its place.
    private func leave(_ system: String, link number: Int) {
        let (admitted, node) = state.withLock { state -> ([Waiter], String) in
            guard let index = state.links.index(forKey: system), state.links.values[index].number == number else { return ([], "") }
            state.links.values[index].calls -= 1
            return (state.links.values[index].admitWaiters(), state.links.values[index].node)
        }
        resume(admitted, link: number, node: node)
    }

    /// Lets the admitted calls go on the link `number` of `node` (their places are counted already).
    func resume(_ admitted: [Waiter], link number: Int, node: String) {
        for waiter in admitted {
            clock.cancel(waiter.timer)
            waiter.continuation.resume(returning: (number, node))
        }
    }
}

extension ClusterActorSystem.Link {
    /// A place among the calls in flight, when one is free and no call waits for one before
    /// it: the link's number and node.
    mutating func takePlace() -> (Int, String)? {
        guard waiting.isEmpty, calls < ActorCall.maxCallsPerConnection else { return nil }
        calls += 1
        return (number, node)
    }

    /// Takes the waiting calls that fit, in turn, counting their places.
    mutating func admitWaiters() -> [ClusterActorSystem.Waiter] {
        var admitted: [ClusterActorSystem.Waiter] = []
        while calls < ActorCall.maxCallsPerConnection, nextTurn < turns.count {
            if let waiter = waiting.removeValue(forKey: turns[nextTurn]) {
                calls += 1
                admitted.append(waiter)
            }
            nextTurn += 1
        }
        // The turns taken go once they are half the list: each call's turn is moved at most
        // about once, however long the queue.
        if nextTurn > 0, nextTurn * 2 >= turns.count {
            turns.removeFirst(nextTurn)
            nextTurn = 0
        }
        return admitted
    }
}
