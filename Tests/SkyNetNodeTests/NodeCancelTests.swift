import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// A `cancelled` reply means the slot is free: a client that sends a new scan the moment it
/// reads that reply is never told `busy`.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct NodeCancelTests {
    let nodeTests = NodeHarness()

    /// The request of round `round`: the built-in scan, with a deadline or not, or a command job.
    enum Kind: String, CaseIterable, Sendable {
        case scan, scanWithTimeout, command

        func request(_ round: Int) -> String {
            let task = UUID().uuidString
            switch self {
            case .scan: return #"{"type":"scan","id":\#(round),"task":{"id":"\#(task)","input":\#(round),"duration":30}}"#
            case .scanWithTimeout:
                return #"{"type":"scan","id":\#(round),"task":{"id":"\#(task)","input":\#(round),"duration":30,"timeout":60}}"#
            case .command:
                return #"{"type":"job","id":\#(round),"job":"wait","task":{"id":"\#(task)","sector":\#(round),"input":"30"}}"#
            }
        }
    }

    /// A raw client on a node of capacity 1: a long task, its cancel (in the same write, or
    /// once a ping shows it running), and on the `cancelled` reply at once the next one, many
    /// times; then a short scan that must complete. Every reply must be `cancelled`: a `busy`
    /// is a reply that overtook the freeing of its slot.
    @Test(arguments: [(Kind.scan, false), (.scan, true), (.scanWithTimeout, false), (.scanWithTimeout, true),
                      (.command, false), (.command, true)])
    func aTaskSentOnTheCancelledReplyIsNeverBusy(kind: Kind, waitUntilRunning: Bool) async throws {
        var options = nodeTests.options(capacity: 1)
        try options.jobs.register("wait", CommandJob(name: "wait", command: CommandTemplate("sleep {}"), killGrace: .seconds(2)))
        let rounds = kind == .command ? 30 : 200
        try await nodeTests.withNode(options) { node in
            let replies = try await onOwnThread(named: "test-cancel") { () throws -> [String] in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                try client.send(#"{"type":"hello","version":1,"name":"raw"}"#)
                guard let welcome = client.readLine(), welcome.contains(#""welcome""#) else { return ["no welcome"] }
                var replies: [String] = []
                for round in 1...rounds {
                    let cancel = #"{"type":"cancel","id":\#(round)}"#
                    if waitUntilRunning {
                        try client.send(kind.request(round))
                        var running = false
                        for _ in 0..<10_000 where !running {
                            try client.send(#"{"type":"ping","id":100000}"#)
                            guard let pong = client.readLine(silence: .seconds(60)) else { return replies + ["no pong"] }
                            running = pong.contains(#""running":1"#)
                        }
                        try client.send(cancel)
                    } else {
                        // One write: the cancel may reach the node before the task has its slot.
                        try client.send(kind.request(round) + "\n" + cancel)
                    }
                    // Generous: a loaded machine (the full suite under ThreadSanitizer) has stalled replies 10 s.
                    guard let reply = client.readLine(silence: .seconds(60)) else { return replies + ["nothing after round \(round)"] }
                    replies.append(reply)
                    if !reply.contains(#""cancelled""#) { break }
                }
                try client.send(#"{"type":"scan","id":99999,"task":{"id":"\#(UUID().uuidString)","input":5,"duration":0}}"#)
                replies.append(client.readLine(silence: .seconds(60)) ?? "nothing for the last scan")
                return replies
            }
            let codes = replies.map { jsonFields($0).map { ($0["code"] as? String) ?? ($0["type"] as? String ?? "?") } ?? $0 }
            #expect(codes.count == rounds + 1, "\(replies.suffix(2))")
            #expect(codes.dropLast().allSatisfy { $0 == "cancelled" }, "\(Dictionary(grouping: codes, by: { $0 }).mapValues(\.count))")
            #expect(codes.last == "result", "\(replies.last ?? "")")
        }
    }
}
