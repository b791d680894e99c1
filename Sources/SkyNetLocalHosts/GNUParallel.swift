import Foundation

/// GNU parallel, for the test that compares our replacement strings with its own and the
/// benchmark's columns beside it. Debian's moreutils ships another program called `parallel`
/// (other options, none of GNU's): a `parallel` first on PATH that is not GNU's counts as
/// missing, with its own reason.
package enum GNUParallel {
    /// Where GNU parallel is, or why there is none to run.
    package enum Lookup: Sendable, Equatable {
        case found(path: String)
        case unavailable(reason: String)

        package var path: String? {
            if case .found(let path) = self { path } else { nil }
        }

        package var unavailableReason: String? {
            if case .unavailable(let reason) = self { reason } else { nil }
        }
    }

    /// The first `parallel` in `searchPath` (a value of PATH) when `parallel --version` says
    /// it is GNU parallel, as `.ci/run` asks it.
    package static func lookUp(searchPath: String) async -> Lookup {
        let install = "apt-get install parallel"
        let candidates = searchPath.split(separator: ":").map { "\($0)/parallel" }
        guard let path = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else {
            return .unavailable(reason: "GNU parallel is not on PATH: \(install)")
        }
        let version = try? await ToolRun.run(path, ["--version"], limit: .seconds(10))
        guard let version, version.exit.succeeded, version.stdout.hasPrefix("GNU parallel") else {
            return .unavailable(reason: "\(path) is not GNU parallel (moreutils has a program of that name): \(install)")
        }
        return .found(path: path)
    }

    /// `lookUp` in this process's PATH.
    package static func lookUpOnPath() async -> Lookup {
        await lookUp(searchPath: ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
    }
}
