import Dispatch
import SkyNetRuntime

/// Catches SIGINT, SIGTERM and SIGHUP so a command can stop in order instead of dying: a
/// closed terminal or a lost SSH session (SIGHUP) stops it as SIGTERM does, so its jobs,
/// each in a process group of its own that the hang-up never reaches, are stopped too. A
/// SIGHUP ignored when the process started (`nohup`) stays ignored.
///
/// Install it first thing: `install()` returns once every handler is armed (dispatch
/// registers sources asynchronously), so a signal sent after a node says `listening` is
/// never lost. A second signal exits at once with 128 + its number, after the actions
/// registered with `beforeExit` (e.g. killing spawned nodes).
final class TerminationSignals {
    /// The first signal received.
    let received = AsyncSignal<Int32>()
    private let exitActions = Locked<[@Sendable () -> Void]>([])
    private var sources: [any DispatchSourceSignal] = []

    /// Runs `action` (synchronously, on the signal's queue) if a second signal exits at once.
    func beforeExit(_ action: @escaping @Sendable () -> Void) {
        exitActions.withLock { $0.append(action) }
    }

    static func install() async -> TerminationSignals {
        let signals = TerminationSignals()
        let armed = AsyncSignal<Void>()
        // A hang-up that `nohup` told us to ignore stays ignored.
        let numbers = [SIGINT, SIGTERM] + (wasIgnored(SIGHUP) ? [] : [SIGHUP])
        let pending = Locked(numbers.count)
        for number in numbers {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [received = signals.received, exitActions = signals.exitActions] in
                if received.current != nil {
                    for action in exitActions.withLock({ $0 }) { action() }
                    // Direct writes: the console's queue may be stalled, and we exit now.
                    if isatty(2) == 1 { Console.raw(Progress.clear, to: 2) }  // no progress line left behind
                    exit(128 + number)
                }
                received.fulfil(number)
            }
            source.setRegistrationHandler {
                let done = pending.withLock { pending in
                    pending -= 1
                    return pending == 0
                }
                if done { armed.fulfil(()) }
            }
            source.resume()
            signals.sources.append(source)
        }
        await armed.value
        return signals
    }

    /// Whether `number` was ignored when we started; it is ignored from now on in any case
    /// (a signal we catch is ignored, and a dispatch source receives it).
    private static func wasIgnored(_ number: Int32) -> Bool {
        let previous = signal(number, SIG_IGN)
        return previous.map { unsafeBitCast($0, to: Int.self) } == unsafeBitCast(SIG_IGN, to: Int.self)
    }

    deinit {
        for source in sources { source.cancel() }
    }
}
