import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// A task that came with its files runs in its work directory: the job sees it as the request's
/// directory, and a command's relative `{}` names the copy there.
@Suite(.timeLimit(.minutes(1)))
struct LocalSystemWorkingDirectoryTests {
    private func system() throws -> LocalSystem {
        var jobs = JobRegistry(api: UnreliableAPI(failingEvery: 0))
        try jobs.register("where") { request in request.workingDirectory ?? "none" }
        try jobs.register("cat", CommandJob(name: "cat", command: try CommandTemplate("cat {}")))
        return LocalSystem(capacity: 2, jobs: jobs)
    }

    @Test func theJobRunsInTheDirectoryGiven() async throws {
        try await WorkDirSandbox.with { sandbox in
            let system = try system()
            let task = ScanTask(input: 1, duration: 0, job: "where", text: "x")
            #expect(try await system.run(task, workingDirectory: sandbox.path) == sandbox.path)
            #expect(try await system.run(task) == "none", "without one, the job runs where the process does")
        }
    }

    @Test func aCommandsRelativeInputNamesTheCopyInTheDirectory() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("task/photos/a b.txt", Array("the copy".utf8))
            // The same relative path from the test's own directory names nothing (or something else).
            let system = try system()
            let task = ScanTask(input: 2, duration: 0, job: "cat", text: "photos/a b.txt")
            let result = try await withTimeout(.seconds(30)) { try await system.run(task, workingDirectory: sandbox.at("task")) }
            #expect(result == "the copy")
            #expect(system.counters.completed == 1)
        }
    }

    @Test func aDeadlineStillHoldsInTheDirectory() async throws {
        try await WorkDirSandbox.with { sandbox in
            var jobs = JobRegistry(api: UnreliableAPI(failingEvery: 0))
            try jobs.register("sleep", CommandJob(name: "sleep", command: try CommandTemplate("sleep {}")))
            let system = LocalSystem(capacity: 1, jobs: jobs)
            let task = ScanTask(input: 0, duration: 0, job: "sleep", text: "30", timeout: 0.2)
            await #expect(throws: ScanFailure.deadline(seconds: 0.2)) {
                try await withTimeout(.seconds(30)) { try await system.run(task, workingDirectory: sandbox.path) }
            }
        }
    }
}
