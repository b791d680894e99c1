import Foundation
import SkyNet
import SkyNetRuntime

/// A second "machine" for tests: a network namespace `skynet-<8 hex>` joined to this one by a
/// veth pair, this side 10.213.K.1/30, inside 10.213.K.2/30 (K picked among the /30s no
/// interface uses yet). A server started with `launcher` runs inside it; `cut()` takes the
/// link down as a pulled cable would. Root only (`ip netns`, veth). The tests that use it
/// reach 10.213.K.2 instead of 127.0.0.1: a network of their own is what they test.
///
/// `stop()` must be called on every path (`withNetworkNamespace` does): it kills every
/// process inside and deletes the link and the namespace.
package final class NetworkNamespace: Sendable {
    /// Why no namespace can be made here, or nil when one can.
    package static let unavailableReason: String? = {
        guard geteuid() == 0 else { return "network namespaces need root" }
        guard ipPath != nil else { return "`ip` (iproute2) is not installed" }
        return nil
    }()

    /// Whether a namespace can be made here (for `.enabled(if:)`).
    package static var isAvailable: Bool { unavailableReason == nil }

    static let ipPath: String? = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    package let name: String
    /// This side's end of the veth pair (the inner end is `sk<6>n`).
    package let link: String
    /// This side's address on the link, and the address inside the namespace.
    package let outsideAddress: String
    package let insideAddress: String
    private let ip: String
    private let stopped = Locked(false)

    /// The words that run a program inside: `ip netns exec NAME` (ip execs the program, so
    /// the process started is the program itself).
    package var launcher: [String] { [ip, "netns", "exec", name] }

    private init(name: String, link: String, block: Int, ip: String) {
        self.name = name
        self.link = link
        outsideAddress = "10.213.\(block).1"
        insideAddress = "10.213.\(block).2"
        self.ip = ip
    }

    /// Makes the namespace and its link, both up, with loopback up inside.
    package static func make() async throws -> NetworkNamespace {
        if let reason = unavailableReason { throw ToolRunError(description: reason) }
        let ip = ipPath ?? "ip"
        let tag = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let used = try await run(ip, ["-o", "-4", "addr", "show"])
        guard let block = (0..<256).shuffled().first(where: { !used.contains(" 10.213.\($0).") }) else {
            throw ToolRunError(description: "every 10.213.K.0/30 is in use")
        }
        let namespace = NetworkNamespace(name: "skynet-" + tag.prefix(8), link: "sk\(tag.prefix(6))h", block: block, ip: ip)
        let inner = "sk\(tag.prefix(6))n"
        do {
            try await run(ip, ["netns", "add", namespace.name])
            try await run(ip, ["link", "add", namespace.link, "type", "veth", "peer", "name", inner])
            try await run(ip, ["link", "set", inner, "netns", namespace.name])
            try await run(ip, ["addr", "add", namespace.outsideAddress + "/30", "dev", namespace.link])
            try await run(ip, ["link", "set", namespace.link, "up"])
            try await run(ip, ["-n", namespace.name, "addr", "add", namespace.insideAddress + "/30", "dev", inner])
            try await run(ip, ["-n", namespace.name, "link", "set", inner, "up"])
            try await run(ip, ["-n", namespace.name, "link", "set", "lo", "up"])
        } catch {
            await namespace.stop()
            throw error
        }
        return namespace
    }

    /// Takes this side of the link down: packets to the inside are dropped, no reset is sent.
    package func cut() async throws { try await Self.run(ip, ["link", "set", link, "down"]) }

    /// Brings the link back up after `cut()`.
    package func mend() async throws { try await Self.run(ip, ["link", "set", link, "up"]) }

    /// The processes running inside.
    package func processes() async -> [Int32] {
        let listed = try? await Self.run(ip, ["netns", "pids", name])
        return (listed ?? "").split(whereSeparator: \.isNewline).compactMap { Int32($0) }
    }

    /// Kills every process inside, deletes the link and the namespace. Safe to call twice.
    package func stop() async {
        guard stopped.withLock({ state in defer { state = true }; return !state }) else { return }
        let inside = await processes()
        HostProcesses.freezeAndKill { inside }
        await HostProcesses.awaitGone(inside, within: .seconds(5))
        // Deleting one end deletes the pair; the namespace's deletion would too.
        _ = try? await Self.run(ip, ["link", "del", link])
        _ = try? await Self.run(ip, ["netns", "del", name])
    }

    /// Runs `ip` with `arguments`; its stdout, or an error with its stderr.
    @discardableResult
    static func run(_ ip: String, _ arguments: [String]) async throws -> String {
        let run = try await ToolRun.run(ip, arguments, limit: .seconds(10))
        guard run.exit.succeeded else {
            throw ToolRunError(description: "ip \(arguments.joined(separator: " ")): \(run.exit): \(run.stderr)")
        }
        return run.stdout
    }
}

/// Makes a namespace, runs `body`, and stops the namespace on every path.
package func withNetworkNamespace<T: Sendable>(_ body: (NetworkNamespace) async throws -> T) async throws -> T {
    let namespace = try await NetworkNamespace.make()
    do {
        let result = try await body(namespace)
        await namespace.stop()
        return result
    } catch {
        await namespace.stop()
        throw error
    }
}

extension SSHTestHost.Options {
    /// A host whose sshd runs inside `namespace`, on its address and port 22.
    package static func inside(_ namespace: NetworkNamespace, skynet: String? = nil) -> SSHTestHost.Options {
        var options = SSHTestHost.Options(skynet: skynet)
        options.address = namespace.insideAddress
        options.port = 22
        options.launcher = namespace.launcher
        return options
    }
}
