import Foundation
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetTransport
import SkyNetTestSupport
import Testing

/// A client that sends its scans and then ends its side (a half-close) in the same write gets
/// every result: the node runs such scans on the loop that reads the link, and the end it read
/// in the same turn is decided only once they have answered.
@Suite(.timeLimit(.minutes(1)))
struct NodeHalfCloseTests: NodeTesting {
    @Test(arguments: [1, 3, 40])
    func scansSentJustBeforeAHalfCloseAreAllAnswered(count: Int) async throws {
        try await withNode(capacity: 64) { node in
            let results = try await onOwnThread(named: "test-half-close") { () throws -> [Int] in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                try client.send(#"{"type":"hello","version":1}"#)
                _ = client.readLine()  // the welcome
                var burst = ""
                for id in 1...count {
                    burst += #"{"type":"scan","id":\#(id),"task":{"id":"6f1c0000-0000-0000-0000-\#(String(format: "%012d", id))","input":\#(id),"duration":0}}"# + "\n"
                }
                try client.send(bytes: Array(burst.utf8))
                client.socket.shutdown(reading: false, writing: true)
                return client.readToEnd().compactMap { line in
                    guard let fields = jsonFields(line), fields["type"] as? String == "result" else { return nil }
                    return fields["id"] as? Int
                }
            }
            #expect(results.sorted() == Array(1...count))
        }
    }
}
