import Foundation
import SkyNet
import SkyNetCluster

extension NodeProcess {
    /// `start` with the node's stderr written to `stderr` (an open file), which stays open
    /// until the child has it: the library takes a descriptor, not a Foundation handle.
    package static func start(
        executable: URL, name: String, arguments: [String] = [], stderr: FileHandle,
        environment: [String: String]? = nil, portOverride: Int = 0, timeout: Duration = .seconds(10)
    ) async throws -> NodeProcess {
        let node = try await start(executable: executable, name: name, arguments: arguments, stderr: .descriptor(stderr.fileDescriptor),
                                   environment: environment, portOverride: portOverride, timeout: timeout)
        withExtendedLifetime(stderr) {}  // open until the child has its copy
        return node
    }
}
