@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetSSH
@testable import SkyNetScheduler
import SkyNetTestSupport
import Testing

struct SSHFailureTests {
    func classify(_ reason: ChildExit.Reason, _ line: String?) -> SSHFailure {
        SSHFailure.classify(exit: ChildExit(reason: reason, peakResidentKiB: 0), lastLine: line, host: "127.0.0.1",
                            checkHint: "ssh gpu1 true")
    }

    @Test func aRefusedLoginReadsAsTheIssueSays() {
        let failure = classify(.exited(255), "root@127.0.0.1: Permission denied (publickey).")
        #expect(failure == SSHFailure(kind: .login, reason: "ssh: Permission denied (publickey)", fix: "check the login with: ssh gpu1 true"))
        #expect(failure.isPermanent)
        #expect(ClusterEvent.sshUnreachable("gpu1", login: "gpu1", reason: failure.reason, fix: failure.fix).description ==
                "[Cluster] Unreachable: gpu1 (ssh: Permission denied (publickey)) — check the login with: ssh gpu1 true")
    }

    @Test(arguments: [
        ("Host key verification failed.", SSHFailure.Kind.hostKey, "ssh: Host key verification failed"),
        ("@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @", .hostKey, "ssh: @    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @"),
        ("ssh: connect to host 127.0.0.1 port 1: Connection refused", .unreachable, "ssh: connect to host 127.0.0.1 port 1: Connection refused"),
        ("Connection to 127.0.0.1 closed by remote host.", .unreachable, "ssh: Connection to 127.0.0.1 closed by remote host"),
        ("other@host: Permission denied (publickey).", .login, "ssh: other@host: Permission denied (publickey)"),
    ])
    func sshsOwnLinesAreKeptInItsWords(line: String, kind: SSHFailure.Kind, reason: String) {
        let failure = classify(.exited(255), line)
        #expect(failure.kind == kind)
        #expect(failure.reason == reason)
        #expect(failure.isPermanent == (kind != .unreachable))
    }

    @Test func theRemoteShellsLinesAreShownAsTheyAre() {
        let missing = classify(.exited(127), "sh: 1: exec: skynet: not found")
        #expect(missing.kind == .noSkynet)
        #expect(missing.reason == "sh: 1: exec: skynet: not found")
        #expect(missing.fix == "install skynet on its PATH (swift build -c release --static-swift-stdlib), or give --ship")
        let other = classify(.exited(120), "skynet --ship: this host is Darwin arm64, not Linux x86_64")
        #expect(other.kind == .otherPlatform && other.isPermanent)
        #expect(classify(.exited(121), nil).kind == .needsShipment)
        #expect(classify(.exited(122), "skynet --ship: the copy has SHA-256 ab, not cd").kind == .shipFailed)
    }

    /// `--ship`: a directory at the copy's name is refused for good, with what to do.
    @Test func aDirectoryAtTheCopysNameIsRefusedForGood() {
        let line = "skynet --ship: cannot keep the copy as /h/.cache/skynet/skynet-ab: it is a directory"
        let directory = classify(.exited(124), line)
        #expect(directory == SSHFailure(kind: .cannotShip, reason: line, fix: "--ship keeps its copy as a file: remove that directory on that host"))
        #expect(directory.isPermanent)
    }

    /// `--ship`: a copy that is a symbolic link, not a regular file or not the login's is removed
    /// and shipped again, as one that is not this build, its line said as it is.
    @Test func aCopyThatIsNotTheLoginsOwnRegularFileIsShippedAgain() {
        for line in ["skynet --ship: the copy /h/.cache/skynet/skynet-ab is a symbolic link",
                     "skynet --ship: the copy /h/.cache/skynet/skynet-ab is not a regular file",
                     "skynet --ship: the copy /h/.cache/skynet/skynet-ab is owned by bob, not by alice"] {
            let failure = classify(.exited(125), line)
            #expect(failure == SSHFailure(kind: .copyMismatch, reason: line, fix: ""))
            #expect(!failure.isPermanent)
        }
    }

    @Test func anyOtherEndSaysHowSSHEnded() {
        #expect(classify(.exited(3), nil).reason == "ssh exited with status 3")
        #expect(classify(.signalled(9), "x").reason == "ssh killed by signal 9 (SIGKILL)")
        #expect(classify(.exited(255), nil).reason == "ssh exited with status 255")
        #expect(classify(.exited(0), "[Node] bye") == SSHFailure(kind: .ended, reason: "skynet node ended the session: [Node] bye", fix: ""))
        #expect(classify(.exited(2), "error: option '--x' is unknown").reason == "ssh exited with status 2: error: option '--x' is unknown")
    }

    @Test func aLineBucketLetsABurstThroughThenTwentyASecond() {
        let start = ContinuousClock.now
        var bucket = LineBucket(burst: 200, rate: 20, now: start)
        #expect((0..<200).allSatisfy { _ in bucket.take(now: start).allowed })
        #expect((0..<50).allSatisfy { _ in !bucket.take(now: start).allowed })
        #expect(bucket.dropped == 50)
        let later = bucket.take(now: start + .milliseconds(50))
        #expect(later.allowed && later.droppedBefore == 50)
        #expect(!bucket.take(now: start + .milliseconds(50)).allowed)
    }

    /// A host writing 2,300 lines a second for 8 s: after the burst, 20 lines a second, and the
    /// count of those dropped said at most once a second (said before every line let through,
    /// it doubled what came out: ~40 lines a second).
    @Test func aFloodIsHeldToTwentyLinesASecondAndItsDropsAreSaidAtMostOnceASecond() {
        let start = ContinuousClock.now
        var bucket = LineBucket(burst: 200, rate: 20, now: start)
        let total = 2_300 * 8
        var passed: [ContinuousClock.Instant] = [], notes: [ContinuousClock.Instant] = [], said = 0
        for index in 0..<total {
            let now = start + .seconds(Double(index) / 2_300)
            let (allowed, dropped) = bucket.take(now: now)
            if dropped > 0 { notes.append(now); said += dropped }
            if allowed { passed.append(now) }
        }
        #expect(passed.count >= 200 + 20 * 8 - 1 && passed.count <= 200 + 20 * 8 + 1, "\(passed.count) lines let through")
        #expect(notes.count <= 8, "\(notes.count) notes")
        #expect(zip(notes, notes.dropFirst()).allSatisfy { $1 - $0 >= .seconds(1) }, "\(notes.map { $0 - start })")
        // Every line is either let through, said dropped, or still counted for the final note.
        #expect(passed.count + said + bucket.dropped == total)
        // After the burst, no second carries more than 20 lines and one note.
        let afterBurst = passed[200...] + notes
        for second in 1..<8 {
            let window = start + .seconds(second)..<start + .seconds(second + 1)
            #expect(afterBurst.filter { window.contains($0) }.count <= 21, "second \(second)")
        }
    }
}
