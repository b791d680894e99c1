@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetSSH
import Testing

/// `--ship`'s step between dials: a host that still lacks a runnable copy right after a
/// verified upload is a failure for good, not an upload over and over.
struct PeerLinksShipTests {
    @Test func noCopyRightAfterAnUploadIsAFailureForGoodWithoutUploadingAgain() async throws {
        let dialer = SSHDialer(name: "gpu1", login: SSHLogin(host: "gpu1"), settings: SSHSettings(ship: true))
        let needs = SSHFailure(kind: .needsShipment, reason: "no copy of this build", fix: "")
        // `again`: no upload is tried (none could be: this dialer's ssh reaches no host).
        let error = await PeerLinks.shipIfNeeded(after: needs, by: dialer, again: true, timeout: .seconds(1))
        let failure = try #require(error as? SSHFailure)
        #expect(failure.isPermanent, "\(failure)")
        #expect(failure.reason.hasPrefix("skynet --ship: "), "\(failure)")
        // Any other failure passes through as it is.
        let other = SSHFailure(kind: .unreachable, reason: "ssh: x", fix: "y")
        #expect(await PeerLinks.shipIfNeeded(after: other, by: dialer, again: true, timeout: .seconds(1)) as? SSHFailure == other)
    }

    /// A copy that was not this build (removed by the host) is said before it is shipped again;
    /// right after an upload it is a failure for good instead, as a missing copy is.
    @Test func aCopyThatIsNotThisBuildIsSaidAndShippedAgainButNotRightAfterAnUpload() async throws {
        let dialer = SSHDialer(name: "gpu1", login: SSHLogin(host: "gpu1"), settings: SSHSettings(ship: true))
        let reason = "skynet --ship: the copy /h/.cache/skynet/skynet-cd does not match this build: its SHA-256 is ab"
        let mismatch = SSHFailure(kind: .copyMismatch, reason: reason, fix: "")
        #expect(PeerLinks.shippingAgain("gpu1", after: mismatch, justShipped: false)?.description == "[Cluster] Shipping again: gpu1 (\(reason))")
        #expect(PeerLinks.shippingAgain("gpu1", after: mismatch, justShipped: true) == nil)
        let needs = SSHFailure(kind: .needsShipment, reason: "no copy of this build", fix: "")
        #expect(PeerLinks.shippingAgain("gpu1", after: needs, justShipped: false) == nil)
        let error = await PeerLinks.shipIfNeeded(after: mismatch, by: dialer, again: true, timeout: .seconds(1))
        #expect((error as? SSHFailure)?.isPermanent == true, "\(error.map { "\($0)" } ?? "nil")")
    }
}
