import Testing
@testable import SkyNetRuntime
@testable import SkyNetTransport

/// A link's pipes are raised to 1 MiB within the process's budget, and a pair's close gives
/// its share back.
#if os(Linux)
@Suite struct PipeCapacityTests {
    /// `F_GETPIPE_SZ`: a pipe's capacity.
    private func capacity(_ fd: Int32) -> Int32 { fcntl(fd, 1032) }

    @Test func pipesAreRaisedWhileTheBudgetLasts() throws {
        let budget = PipeCapacity(budget: 3 << 20)
        let first = try ChildProcess.makePipe(), second = try ChildProcess.makePipe()
        defer { for fd in [first.read, first.write, second.read, second.write] { _ = close(fd) } }
        // Both ends of one pipe count once; two pipes take 2 MiB of the 3.
        #expect(budget.raise([first.read, first.write, second.read]) == 2 << 20)
        #expect(capacity(first.read) == 1 << 20 && capacity(second.write) == 1 << 20)
        let third = try ChildProcess.makePipe(), fourth = try ChildProcess.makePipe()
        defer { for fd in [third.read, third.write, fourth.read, fourth.write] { _ = close(fd) } }
        #expect(budget.raise([third.read, fourth.write]) == 0, "over the budget: left as they are")
        #expect(capacity(third.read) == 64 << 10)
        budget.giveBack(2 << 20)
        #expect(budget.raise([third.read, fourth.write]) == 2 << 20)
        #expect(capacity(fourth.read) == 1 << 20)
    }
}
#endif
