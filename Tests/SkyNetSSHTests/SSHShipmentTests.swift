import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetSSH
import Testing

/// `--ship` reads the executable that runs, not whatever a rebuild left at its path.
struct SSHShipmentTests {
    @Test func thisExecutableIsReadThroughProcSoThatARebuildCannotChangeOrHideIt() async throws {
        let shipment = try await SSHShipment.local()
        #expect(shipment.path == "/proc/\(getpid())/exe")
        // The same bytes as the file this test runs from (nobody rebuilds it meanwhile).
        let running = runningExecutablePath()
        #expect(try SSHShipment.of(running).sha256 == shipment.sha256)
        #expect(try await SSHShipment.of(executable: running) == shipment)
    }

    @Test func aRebuiltOrDeletedOwnPathIsReadThroughProc() throws {
        let own = "/proc/\(getpid())/exe"
        #expect(SSHShipment.readable("/x/skynet", running: "/x/skynet (deleted)") == own)
        #expect(SSHShipment.readable("/x/skynet (deleted)", running: "/x/skynet (deleted)") == own)
        #expect(SSHShipment.readable("/x/skynet", running: "/x/skynet") == own)
        // Another executable (tests ship the built skynet) is read where it is.
        #expect(SSHShipment.readable("/y/skynet", running: "/x/skynet") == "/y/skynet")
        #expect(SSHShipment.readable("/x/skynet-other", running: "/x/skynet (deleted)") == "/x/skynet-other")
    }

    @Test func aSymbolicLinkToThisExecutableIsReadThroughProc() throws {
        let link = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-self-\(UUID().uuidString)").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: runningExecutablePath())
        defer { try? FileManager.default.removeItem(atPath: link) }
        #expect(SSHShipment.readable(link) == "/proc/\(getpid())/exe")
    }
}
