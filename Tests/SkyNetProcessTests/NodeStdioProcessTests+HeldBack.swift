import Foundation
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension NodeStdioProcessTests {
    /// The coordinator's side stopped reading the node's stdout, so the node holds back reading
    /// its stdin (back pressure), and then closed stdin: the node must still see the end of its
    /// input and exit within about a second, its job's process group gone, rather than wait in
    /// the pause for replies nobody will read (until the idle sweep, or for ever under a job).
    @Test func stdinClosedWhileTheNodeHoldsBackReadingEndsItAndTheJobsGroup() async throws {
        let unread = try ChildProcess.makePipe()  // the node's stdout: never read
        defer { close(unread.read); close(unread.write) }
        try await groups.withHangingJob(tasks: 1) { folder, job in
            try await withStdioNode(["--job", job], stdout: .descriptor(unread.write)) { node in
                node.send(Self.hello)
                node.send(Self.job("hang", id: 1, input: folder.appendingPathComponent("t0").path))
                let started = try await groups.awaitAllStarted(in: folder, tasks: 1)
                #expect(started.count == 2)

                let input = node.input
                let written = try await onOwnThread(named: "flood") { Self.floodUntilHeldBack(input) }
                // A pong is ~4 times its ping: past 1 MiB of replies waiting, the node pauses.
                #expect(written > 200_000 && written < 8 << 20, "wrote \(written) bytes of pings")

                let start = ContinuousClock.now
                node.closeInput()
                let (took, exit) = try await node.exit(since: start)
                let log = node.child.stderrLines?.lines ?? []
                #expect(exit.reason == .exited(0), "\(log)")
                // 1 s is the promise (0.2 s more for the pause's look at its input); the margin
                // is for a loaded two-core machine, as in the tests beside it.
                #expect(took < .seconds(3), "took \(took)")
                #expect(await groups.survivors(of: started, within: .seconds(1)) == [])
            }
        }
    }

    /// Writes pings to `fd` until the reader has taken nothing for 2 s while the pipe is full:
    /// the node holds back. Returns the bytes written; gives up after 8 MiB or 30 s.
    static func floodUntilHeldBack(_ fd: Int32) -> Int {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)  // the test's own end of the pipe
        let pings = Array(String(repeating: #"{"type":"ping","id":2}"# + "\n", count: 1000).utf8)
        let deadline = ContinuousClock.now + .seconds(30)
        var written = 0, offset = 0
        while written < 8 << 20, ContinuousClock.now < deadline {
            let count = pings[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                written += count
                offset = (offset + count) % pings.count
                continue
            }
            guard count < 0, errno == EAGAIN else { return written }
            var polled = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&polled, 1, 2000) == 0 { return written }  // full, and not read from for 2 s
        }
        return written
    }
}
