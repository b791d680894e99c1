import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetWork
import Testing

/// On the coordinator's own system nothing is copied: the task runs as it is, then each
/// `--return` file must be there (a regular file, no link on the way) and is hashed for the
/// journal; a path that cannot travel is given up at once, a missing file is retried.
@Suite(.timeLimit(.minutes(1)))
struct TransferringLocalSystemTests {
    /// A local system whose job `mk` writes `CONTENT` at `here/INPUT.out` (or nothing when the
    /// input starts with `none`), counting its runs.
    private func system(_ sandbox: ReturnSandbox, returns: [String] = ["{}.out"], transfer: Bool = true,
                        runs: Locked<Int> = Locked(0)) throws -> (TransferringLocalSystem, ReturnRecords) {
        var jobs = JobRegistry(api: UnreliableAPI(failingEvery: 0))
        let here = sandbox.here
        try jobs.register("mk") { request in
            runs.withLock { $0 += 1 }
            if !request.input.hasPrefix("none") {
                try Data("made from \(request.input)".utf8).write(to: URL(fileURLWithPath: here + "/" + request.input + ".out"))
            }
            return "ok \(request.sector)"
        }
        let spec = TransferSpec(transfer: transfer, returns: try returns.map { try ReturnTemplate($0) })
        let records = ReturnRecords()
        let local = LocalSystem(name: "local", capacity: 2, jobs: jobs)
        return (TransferringLocalSystem(wrapping: local, spec: spec, records: records, roots: sandbox.roots), records)
    }

    @Test func theTaskRunsAsItIsAndItsReturnedFileIsRecordedWithItsHash() async throws {
        try await ReturnSandbox.with { sandbox in
            let (system, records) = try system(sandbox)
            #expect(system.isLocal && system.name == "local")
            let task = ScanTask(input: 3, job: "mk", text: "a b.txt")
            #expect(try await system.run(task) == "ok 3")
            let content = Array("made from a b.txt".utf8)
            #expect(records.take(task.id) == [ReturnedFile(path: "a b.txt.out", size: Int64(content.count), sha256: SHA256.hash(content))])
            #expect(records.take(task.id) == [])
            #expect(records.count == 0)
        }
    }

    @Test func aMissingReturnFailsTheTaskByName() async throws {
        try await ReturnSandbox.with { sandbox in
            let (system, records) = try system(sandbox)
            let task = ScanTask(input: 0, job: "mk", text: "none.txt")
            await #expect(throws: ScanFailure(code: .missingReturn, message: "did not produce none.txt.out")) { try await system.run(task) }
            #expect(records.count == 0)
        }
    }

    @Test func aReturnThatIsASymbolicLinkIsNotReturned() async throws {
        try await ReturnSandbox.with { sandbox in
            try "secret".write(toFile: sandbox.outside + "/secret", atomically: false, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: sandbox.here + "/none-link.out", withDestinationPath: sandbox.outside + "/secret")
            let (system, records) = try system(sandbox)
            let task = ScanTask(input: 0, job: "mk", text: "none-link")
            await #expect(throws: ScanFailure(code: .missingReturn, message: "none-link.out is a symbolic link: not returned")) {
                try await system.run(task)
            }
            #expect(records.count == 0)
        }
    }

    @Test func aPathThatCannotTravelIsGivenUpAfterOneAttemptWithoutRunning() async throws {
        try await ReturnSandbox.with { sandbox in
            let runs = Locked(0)
            let (system, _) = try system(sandbox, runs: runs)
            let systems = Systems()
            await systems.add(system, capacity: 2)
            let log = EventLog()
            let report = await Coordinator(systems: systems, maxAttempts: 5) { log.append($0) }
                .run([ScanTask(input: 0, job: "mk", text: "../escape.txt")])
            #expect(report.gaveUp == 1 && report.reruns == 0)
            #expect(runs.withLock { $0 } == 0)
            let attempts = log.all.compactMap { if case .gaveUp(_, let attempts, _, _, _) = $0 { attempts } else { nil } }
            #expect(attempts == [1])
            #expect(!FileManager.default.fileExists(atPath: sandbox.base + "/escape.txt.out"))
        }
    }

    @Test func aMissingReturnIsRetriedLikeAnyFailure() async throws {
        try await ReturnSandbox.with { sandbox in
            let runs = Locked(0)
            let (system, _) = try system(sandbox, runs: runs)
            let systems = Systems()
            await systems.add(system, capacity: 2)
            let report = await Coordinator(systems: systems, maxAttempts: 3).run([ScanTask(input: 0, job: "mk", text: "none")])
            #expect(report.gaveUp == 1 && report.reruns == 2)
            #expect(runs.withLock { $0 } == 3)
        }
    }
}
