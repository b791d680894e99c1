/// How a child process ended, and what it used.
package struct ChildExit: Sendable, Equatable, CustomStringConvertible {
    /// Why it ended: an exit status, or the signal that killed it.
    package enum Reason: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)
    }

    package let reason: Reason
    /// The child's peak resident memory, from `wait4`'s rusage (KiB on Linux).
    package let peakResidentKiB: Int

    /// The exit status, or the number of the signal that killed it (as Foundation's
    /// `terminationStatus` reports it).
    package var status: Int32 {
        switch reason {
        case .exited(let code), .signalled(let code): code
        }
    }

    /// Whether it exited with status 0.
    package var succeeded: Bool { reason == .exited(0) }

    /// `exit status 3` or `killed by signal 9 (SIGKILL)`.
    package var description: String {
        switch reason {
        case .exited(let code): "exit status \(code)"
        case .signalled(let number): "killed by signal \(number)" + (Self.signalNames[number].map { " (\($0))" } ?? "")
        }
    }

    static let signalNames: [Int32: String] = [
        SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGABRT: "SIGABRT",
        SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGSEGV: "SIGSEGV", SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM",
        SIGTERM: "SIGTERM", SIGUSR1: "SIGUSR1", SIGUSR2: "SIGUSR2", SIGBUS: "SIGBUS",
    ]
}

extension ChildExit {
    /// Decodes a `wait` status.
    init(waitStatus status: Int32, usage: rusage) {
        // WIFEXITED / WTERMSIG are macros Swift does not import.
        let signal = status & 0x7f
        reason = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
        #if canImport(Darwin)
        peakResidentKiB = Int(usage.ru_maxrss) / 1024  // bytes on Darwin
        #else
        peakResidentKiB = Int(usage.ru_maxrss)
        #endif
    }
}

/// A child that could not be started, with the reason a person can act on.
package struct ChildProcessError: Error, CustomStringConvertible, Sendable {
    package let description: String
    /// The errno behind it (ENOENT: no such program, EACCES: not executable), 0 if none.
    package let code: Int32

    init(_ operation: String, code: Int32) {
        self.code = code
        var reason = String(cString: strerror(code))
        if code == EMFILE || code == ENFILE { reason += DescriptorLimit.hint(for: code) }
        description = "\(operation): \(reason)"
    }
}
