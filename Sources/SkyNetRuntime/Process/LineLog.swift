/// Lines as they arrive from a child's output, kept (up to a bound) and awaited.
///
/// Filled by a reader thread of its own; any task may await a line that satisfies a
/// predicate, whether it came before or comes after the call. The lines and the waiters
/// are guarded by one lock (`Locked`).
package final class LineLog: Sendable {
    private struct Waiter {
        let predicate: @Sendable (String) -> Bool
        let signal: AsyncSignal<String?>
    }

    private struct State {
        var lines: [String] = []
        var waiters: [Waiter] = []
        var closed = false
    }

    /// The most lines kept; older ones are dropped (they still wake waiters when they arrive).
    package let keep: Int
    private let state = Locked(State())

    package init(keep: Int = 10_000) {
        self.keep = max(1, keep)
    }

    /// The lines kept so far, oldest first.
    package var lines: [String] { state.withLock { $0.lines } }

    /// Adds a line and wakes the waiters it satisfies. Each predicate is asked once per line,
    /// so a counting predicate stays honest.
    package func append(_ line: String) {
        let matched = state.withLock { state -> [AsyncSignal<String?>] in
            state.lines.append(line)
            if state.lines.count > keep {
                state.lines.removeFirst(state.lines.count - keep)
            }
            var matching: [AsyncSignal<String?>] = []
            state.waiters.removeAll { waiter in
                guard waiter.predicate(line) else { return false }
                matching.append(waiter.signal)
                return true
            }
            return matching
        }
        for signal in matched { signal.fulfil(line) }
    }

    /// Marks the end of the output: waiters still waiting get nil.
    package func close() {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiters = [] }
            return state.waiters.map(\.signal)
        }
        for signal in waiting { signal.fulfil(nil) }
    }

    /// The first line (kept or still to come) that satisfies `predicate`; nil if the output
    /// closes first. The predicate runs under the log's lock: it must not read `lines`.
    package func first(where predicate: @escaping @Sendable (String) -> Bool) async -> String? {
        let signal = AsyncSignal<String?>()
        let early: String?? = state.withLock { state in
            if let line = state.lines.first(where: predicate) { return .some(line) }
            if state.closed { return .some(nil) }
            state.waiters.append(Waiter(predicate: predicate, signal: signal))
            return nil
        }
        if let early { return early }
        return await signal.value
    }

    /// Waits until the output closes.
    package func closed() async {
        _ = await first { _ in false }
    }
}
