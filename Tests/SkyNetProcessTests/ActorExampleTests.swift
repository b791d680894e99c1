import Foundation
import Testing
@testable import SkyNetRuntime

extension ProcessTests {
    /// `skynet-example-actors`: the book's scan over distributed actors on node processes of
    /// its own binary, as README.md runs it.
    @Suite(.timeLimit(.minutes(3)))
    struct ActorExampleTests {
        static let example = skynetBinary.deletingLastPathComponent().appendingPathComponent("skynet-example-actors").path

        /// The node processes of `program` still running (`PROGRAM node …`).
        static func nodesLeft(program: String = "skynet-example-actors") async throws -> [String] {
            let run = try await runProgram("/usr/bin/pgrep", ["-af", "\(program) node"])
            return run.lines.filter { !$0.contains("pgrep") }
        }

        @Test func theBooksScanRunsOverNodesOfItsOwnBinaryAndLeavesNoneBehind() async throws {
            let run = try await runProgram(Self.example, [], limit: .seconds(120))
            #expect(run.status == 0, "\(run.stderr)")
            let lines = run.lines
            #expect(lines.contains("[Cluster] Connected: node1") && lines.contains("[Cluster] Connected: node2"), "\(run.stdout)")
            let completed = lines.filter { $0.hasPrefix("Completed: ") }
            #expect(Set(completed.map { $0.dropFirst("Completed: ".count).prefix { $0.isNumber } }) == Set((0..<20).map { Substring(String($0)) }))
            #expect(completed.contains { $0.hasSuffix(" by node1") } && completed.contains { $0.hasSuffix(" by node2") }, "\(run.stdout)")
            #expect(completed.contains { !$0.contains(" by ") }, "the local system scans too")
            let last = try #require(lines.last)
            #expect(last.hasPrefix("Finished 20 scans in ") && last.hasSuffix(" seconds."), "\(last)")
            #expect(lines.dropLast().last == "Done.")
            #expect(try await Self.nodesLeft().isEmpty)
        }

        @Test(arguments: [(["--spawn", "many"], "--spawn"), (["--ssh", ""], "--ssh"), (["--cluster", "/nonexistent"], "/nonexistent")])
        func aBadArgumentIsAUsageErrorNotACrash(arguments: [String], names: String) async throws {
            let run = try await runProgram(Self.example, arguments)
            #expect(run.status == 1)
            #expect(run.stderr.contains(names) && run.stderr.contains("usage: skynet-example-actors"), "\(run.stderr)")
            #expect(!run.stderr.contains("Fatal error"))
            #expect(try await Self.nodesLeft().isEmpty)
        }

        @Test func itsOwnNodeServesAsSkynetNodeDoesAndDeclaresItsActors() async throws {
            let node = try RunningProcess(["node", "--port", "0", "--name", "alpha"], program: Self.example)
            defer { node.kill() }
            let line = try await node.waitForLine { $0.hasPrefix("listening on ") }
            let port = try #require(Int(line.split(separator: ":").last ?? ""))
            let client = try await RawLineClient(port: port, first: #"{"type":"hello","version":1,"name":"probe"}"#)
            defer { client.close() }
            let welcome = try #require(try await client.receive())
            let actors = try #require(welcome["actors"] as? [String: Any], "\(welcome)")
            #expect((actors["system"] as? String)?.hasPrefix("alpha-") == true && (actors["build"] as? String)?.count == 16, "\(actors)")
            let refusal = try #require(try await client.exchange(#"{"type":"spawn","id":1,"actor_type":"Intruder"}"#))
            #expect(refusal["code"] as? String == "undeclared-actor" && (refusal["message"] as? String)?.contains("Intruder") == true, "\(refusal)")
            let spawned = try #require(try await client.exchange(#"{"type":"spawn","id":2,"actor_type":"ScanSystem","arguments":"probe"}"#))
            #expect(spawned["type"] as? String == "spawned", "\(spawned)")
        }
    }
}
