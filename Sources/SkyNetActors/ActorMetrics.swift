import SkyNetMetrics
import SkyNetRuntime

/// The calls a system ran for others, by actor type, method and outcome, and how long those
/// that ran took: `skynet_actor_calls_total{type,method,outcome}` and the histogram
/// `skynet_actor_call_seconds{type,method}`. Bounded: a type is one this program hosts and a
/// method one the host checked it has (`ActorTarget`); what a caller names that is neither is
/// counted under `(unknown)`, so no caller can grow the label set.
package final class ActorMetrics: Sendable {
    package enum Outcome: String, Sendable, CaseIterable {
        /// The method ran and returned.
        case returned
        /// The method ran and threw.
        case threw
        /// It never ran: no such actor or method, arguments that did not decode, a generic method.
        case refused
    }

    /// The label of what a caller named that is not a hosted type or a checked method.
    package static let unknown = "(unknown)"
    /// Upper bounds of `skynet_actor_call_seconds`, from 100 µs to an hour.
    package static let bounds: [Double] = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300, 3600]

    private struct Key: Hashable {
        let type: String
        let method: String
        let outcome: Outcome
    }

    private struct Method: Hashable {
        let type: String
        let method: String
    }

    private struct State {
        var counts: [Key: Int] = [:]
        var seconds: [Method: HistogramCounts] = [:]
    }

    private let state = Locked(State())

    package init() {}

    /// Counts one call of `method` of an actor of `type` that ended as `outcome`; `seconds`
    /// (nil for a refusal, which never ran) goes into the histogram.
    package func record(type: String, method: String, outcome: Outcome, seconds: Double?) {
        state.withLock { state in
            state.counts[Key(type: type, method: method, outcome: outcome), default: 0] += 1
            if let seconds, outcome != .refused {
                state.seconds[Method(type: type, method: method), default: HistogramCounts(bounds: Self.bounds)].observe(seconds)
            }
        }
    }

    /// How many calls of `method` of `type` ended as `outcome`.
    package func count(type: String, method: String, outcome: Outcome) -> Int {
        state.withLock { $0.counts[Key(type: type, method: method, outcome: outcome)] ?? 0 }
    }

    /// The calls and their seconds as metric families, in a stable order.
    package func families() -> [MetricFamily] {
        let state = state.withLock { $0 }
        let keys = state.counts.keys.sorted { ($0.type, $0.method, $0.outcome.rawValue) < ($1.type, $1.method, $1.outcome.rawValue) }
        let methods = state.seconds.keys.sorted { ($0.type, $0.method) < ($1.type, $1.method) }
        return [
            MetricFamily(name: "skynet_actor_calls_total", help: "Calls of hosted actors' methods, by actor type, method and outcome.",
                         kind: .counter, samples: keys.map {
                             .init(labels: [("type", $0.type), ("method", $0.method), ("outcome", $0.outcome.rawValue)],
                                   value: Double(state.counts[$0] ?? 0))
                         }),
            MetricFamily(name: "skynet_actor_call_seconds", help: "Seconds a hosted actor's method ran, by actor type and method.",
                         kind: .histogram, histograms: methods.compactMap { key in
                             state.seconds[key].map { .init(labels: [("type", key.type), ("method", key.method)], counts: $0) }
                         }),
        ]
    }
}

extension ClusterActorSystem {
    /// What `/metrics` shows of this system: the actors it hosts by type (`skynet_actors`),
    /// and the calls it ran (`ActorMetrics`).
    package func metricFamilies() -> [MetricFamily] {
        let hosted = hostedCounts()
        return [
            MetricFamily(name: "skynet_actors", help: "Distributed actors hosted, by type.", kind: .gauge,
                         samples: hosted.keys.sorted().map { .init(labels: [("type", $0)], value: Double(hosted[$0] ?? 0)) }),
        ] + metrics.families()
    }

    /// How many actors this system hosts, by type (the declared name, else the type's own).
    package func hostedCounts() -> [String: Int] {
        let types = state.withLock { state in
            state.actors.values.compactMap { $0.actor.map { type(of: $0) } }
        }
        var hosted: [String: Int] = [:]
        for type in types { hosted[label(of: type), default: 0] += 1 }
        return hosted
    }
}
