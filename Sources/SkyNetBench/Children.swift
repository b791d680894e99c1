import Foundation
import SkyNet
import SkyNetRuntime

/// The processes the benchmark has running (nodes, scans), killed if it is interrupted
/// (SIGINT or SIGTERM), so that none outlives it; and its temporary files, removed then.
enum Children {
    private static let pids = Locked<Set<Int32>>([])
    private static let files = Locked<Set<String>>([])

    static func track(_ pid: Int32) { _ = pids.withLock { $0.insert(pid) } }
    static func untrack(_ pid: Int32) { _ = pids.withLock { $0.remove(pid) } }

    /// Returns `path`, to be removed if the benchmark is interrupted before `remove(path)`.
    static func temporary(_ path: String) -> String {
        _ = files.withLock { $0.insert(path) }
        return path
    }

    /// Removes a file `temporary` named.
    static func remove(_ path: String) {
        _ = files.withLock { $0.remove(path) }
        unlink(path)
    }

    /// Installs the handlers; call once at start and keep what it returns alive (a dispatch
    /// source that is released stops).
    static func killOnInterrupt() -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                for pid in pids.withLock({ $0 }) { kill(pid, SIGKILL) }
                for path in files.withLock({ $0 }) { unlink(path) }
                exit(128 + number)
            }
            source.resume()
            return source
        }
    }
}
