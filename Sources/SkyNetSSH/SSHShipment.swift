import SkyNetAuth
import SkyNetRuntime

/// This very executable, as `--ship` copies it to a host: its path, SHA-256 and platform.
package struct SSHShipment: Sendable, Equatable {
    /// Why this executable cannot be shipped.
    package struct Unavailable: Error, CustomStringConvertible, Sendable {
        package let description: String
    }

    package let path: String
    package let size: Int
    /// The SHA-256 of its bytes, lowercase hex: the copy's name on a host and its check.
    package let sha256: String
    /// `uname -sm` of this machine: a host must print the same to run the copy.
    package let platform: String

    private static let computed = Locked<[String: Task<SSHShipment, any Error>]>([:])

    /// This executable's shipment: the bytes that run, read through `/proc/PID/exe`.
    package static func local() async throws -> SSHShipment {
        try await of(executable: runningExecutablePath())
    }

    /// The shipment of the executable at `path`, computed once per process (on a thread of its
    /// own: it reads the whole file). This process's own executable is read as `readable(_:)`
    /// says.
    package static func of(executable given: String) async throws -> SSHShipment {
        let path = readable(given)
        let task = computed.withLock { computed in
            if let task = computed[path] { return task }
            let task = Task { try await onBlockingPool { try of(path) } }
            computed[path] = task
            return task
        }
        return try await task.value
    }

    /// The path to read `path` through: when it is this process's own executable (as
    /// `running`, /proc/self/exe's target, names it), `/proc/PID/exe`, which stays the file
    /// that runs even once a rebuild replaced or deleted it at its path (the target then ends
    /// ` (deleted)`): hashed and uploaded, it is what runs here, and reading it never fails.
    /// Any other path as it is; on systems without /proc, too.
    static func readable(_ path: String, running: String = runningExecutablePath(), pid: Int32 = getpid()) -> String {
        let deleted = " (deleted)"
        let current = running.hasSuffix(deleted) ? String(running.dropLast(deleted.count)) : running
        guard path == running || path == current || canonical(path) == current else { return path }
        let own = "/proc/\(pid)/exe"
        return access(own, R_OK) == 0 ? own : path
    }

    /// `path` with its symbolic links resolved, or nil when it cannot be (gone, unreadable).
    static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The shipment of the executable at `path`, streamed through SHA-256 in 1 MiB reads.
    static func of(_ path: String, platform: String = LocalPlatform.name) throws(Unavailable) -> SSHShipment {
        guard platform.isPlatformName else { throw Unavailable(description: "this machine's platform '\(platform)' cannot be named to a host") }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw Unavailable(description: "cannot read this executable (\(path)) to ship it: \(String(cString: strerror(errno)))")
        }
        defer { closeFile(descriptor) }
        var hasher = SHA256(), size = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                throw Unavailable(description: "cannot read this executable (\(path)) to ship it: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            size += count
        }
        return SSHShipment(path: path, size: size, sha256: Secrets.hex(hasher.finalize()), platform: platform)
    }

    /// How long an upload may take: at least a minute, and 256 KiB/s for a large build.
    var uploadBound: Duration { max(.seconds(60), .seconds(Double(size) / Double(256 * 1024))) }
}

extension String {
    /// `Linux x86_64`: two words of `[A-Za-z0-9_.-]`, safe inside the remote command.
    var isPlatformName: Bool {
        let words = split(separator: " ", omittingEmptySubsequences: false)
        return words.count == 2 && words.allSatisfy { word in
            !word.isEmpty && word.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_.-".contains($0)) }
        }
    }
}
