import Foundation
import SkyNet
import SkyNetLocalHosts

/// A hosts file of the test's own, seen as /etc/hosts by the processes it launches: each runs
/// in a mount namespace of its own (`unshare --mount`) where the test's `hosts` and
/// `host.conf` (`multi on`: every line of a name counts) are bind-mounted over the system's.
/// Outside that namespace nothing changes. Root only.
///
/// `set(_:for:)` rewrites `hosts` in place: one `pwrite` at offset 0 of a block always 4,096
/// bytes long (padded with a `#` line). A bind mount pins the inode, so a rename would not be
/// seen, and a truncation would let a reader see an empty file half-way.
package final class ResolverView: Sendable {
    package let folder: String
    package let hostsPath: String
    package let hostConfPath: String
    /// The size of `hosts`, always.
    static let blockSize = 4096

    /// Where `unshare` (util-linux) is, if it is.
    static let unsharePath: String? = ["/usr/bin/unshare", "/bin/unshare"].first(where: FileManager.default.isExecutableFile(atPath:))

    /// Why no view can be made here, or nil when one can.
    package static let unavailableReason: String? = {
        guard geteuid() == 0 else { return "a mount namespace needs root" }
        guard unsharePath != nil else { return "`unshare` (util-linux) is not installed" }
        return nil
    }()

    package static var isAvailable: Bool { unavailableReason == nil }

    /// Makes the folder with a `hosts` that names only localhost, and its `host.conf`.
    package init() throws {
        folder = NSTemporaryDirectory() + "skynet-resolver-\(UUID().uuidString)"
        hostsPath = folder + "/hosts"
        hostConfPath = folder + "/host.conf"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        try "multi on\n".write(toFile: hostConfPath, atomically: false, encoding: .utf8)
        guard FileManager.default.createFile(atPath: hostsPath, contents: nil, attributes: [.posixPermissions: 0o644]) else {
            throw ToolRunError(description: "cannot create \(hostsPath)")
        }
        try write([:])
    }

    /// The words that run a program with this view of /etc/hosts (append the program and its
    /// arguments). The shell gets the paths as arguments, never inside its script.
    package var launcher: [String] {
        [Self.unsharePath ?? "unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
         "mount --bind \"$1\" /etc/hosts && mount --bind \"$2\" /etc/host.conf && shift 2 && exec \"$@\"",
         "resolver", hostsPath, hostConfPath]
    }

    /// Makes `name` resolve to exactly `addresses` (no address: not at all), in place.
    package func set(_ addresses: [String], for name: String) throws {
        try write([name: addresses])
    }

    private func write(_ names: [String: [String]]) throws {
        var text = "127.0.0.1 localhost\n"
        for (name, addresses) in names.sorted(by: { $0.key < $1.key }) {
            for address in addresses { text += "\(address) \(name)\n" }
        }
        var bytes = Array(text.utf8)
        guard bytes.count <= Self.blockSize - 2 else { throw ToolRunError(description: "hosts text over \(Self.blockSize - 2) bytes") }
        bytes += [UInt8(ascii: "#")] + [UInt8](repeating: UInt8(ascii: "#"), count: Self.blockSize - 2 - bytes.count) + [UInt8(ascii: "\n")]
        let descriptor = open(hostsPath, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ToolRunError(description: "open \(hostsPath): errno \(errno)") }
        defer { close(descriptor) }
        let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        guard written == bytes.count else { throw ToolRunError(description: "pwrite \(hostsPath): \(written) of \(bytes.count) bytes, errno \(errno)") }
    }

    /// Removes the folder.
    package func remove() {
        try? FileManager.default.removeItem(atPath: folder)
    }
}
