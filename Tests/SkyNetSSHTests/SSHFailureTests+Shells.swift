@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetSSH
import Testing

/// A missing `skynet` as login shells other than sh report it: the line that says so is not
/// always their last.
extension SSHFailureTests {
    static let installFix = "install skynet on its PATH (swift build -c release --static-swift-stdlib), or give --ship"

    func classify(_ reason: ChildExit.Reason, lines: [String]) -> SSHFailure {
        SSHFailure.classify(exit: ChildExit(reason: reason, peakResidentKiB: 0), lastLine: lines.last, host: "127.0.0.1",
                            checkHint: "ssh gpu1 true", lines: lines)
    }

    @Test func tcshsCommandNotFoundIsAMissingSkynet() {
        // tcsh exits 1, not 127; the call SSHChannel makes today passes the last line alone.
        for failure in [classify(.exited(1), "skynet: Command not found."), classify(.exited(1), lines: ["skynet: Command not found."])] {
            #expect(failure == SSHFailure(kind: .noSkynet, reason: "skynet: Command not found.", fix: Self.installFix))
            #expect(failure.isPermanent)
        }
    }

    @Test func fishsUnknownCommandIsFoundAboveItsCaretLine() {
        let lines = ["fish: Unknown command: skynet", "fish: ", "exec skynet node --stdio", "     ^~~~~^"]
        let failure = classify(.exited(127), lines: lines)
        #expect(failure == SSHFailure(kind: .noSkynet, reason: "fish: Unknown command: skynet", fix: Self.installFix))
        #expect(failure.isPermanent)
    }

    @Test func withoutAMarkedLineTheNewestThatIsMoreThanAMarkerIsTheReason() {
        #expect(classify(.exited(3), lines: ["something odd", "  ^~~^  "]).reason == "ssh exited with status 3: something odd")
        #expect(classify(.exited(2), lines: ["error: option '--x' is unknown", "Run 'skynet help node' for more."]).reason
                == "ssh exited with status 2: error: option '--x' is unknown")
        // ssh's own line and a node's last words stay the newest.
        #expect(classify(.exited(255), lines: ["sh: 1: skynet: not found", "Connection to 127.0.0.1 closed by remote host."]).reason
                == "ssh: Connection to 127.0.0.1 closed by remote host")
        #expect(classify(.exited(0), lines: ["error: x", "[Node] bye"]).reason == "skynet node ended the session: [Node] bye")
    }
}
