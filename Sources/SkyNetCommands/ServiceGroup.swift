/// Services started one after another and stopped in reverse order on every path out, each
/// stop run exactly once (swift-service-lifecycle's `ServiceGroup` is the model). One task
/// uses it: `withServiceGroup` hands it to its body and stops what is left when the body ends.
final class ServiceGroup {
    private var stops: [() async -> Void] = []

    /// Starts a service; once started, its `stop` runs when the group stops, before the stops
    /// of the services started earlier. A start that throws leaves nothing to stop.
    func start<Service, Failure: Error>(
        _ start: () async throws(Failure) -> Service, stop: @escaping (Service) async -> Void
    ) async throws(Failure) -> Service {
        let service = try await start()
        stops.append { await stop(service) }
        return service
    }

    /// Stops the service started last, now rather than with the others.
    func stopLast() async {
        await stops.popLast()?()
    }

    fileprivate func stopAll() async {
        while let stop = stops.popLast() { await stop() }
    }
}

/// Runs `body` with a new group, then stops every service it started and did not stop, in
/// reverse order, whether `body` returned or threw.
func withServiceGroup<Result, Failure: Error>(
    _ body: (ServiceGroup) async throws(Failure) -> Result
) async throws(Failure) -> Result {
    let group = ServiceGroup()
    let outcome: Swift.Result<Result, Failure>
    do { outcome = .success(try await body(group)) } catch { outcome = .failure(error) }
    await group.stopAll()
    return try outcome.get()
}
