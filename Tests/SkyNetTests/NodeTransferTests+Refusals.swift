import Foundation
@testable import SkyNet
@testable import SkyNetNode
@testable import SkyNetTransfer
@testable import SkyNetWire
@testable import SkyNetWork
import SkyNetTestSupport
import Testing

extension NodeTransferTests {
    /// A return over the request's `max_return_size` fails `file-too-large`, and the message
    /// names that bound (the coordinator's), not a --max-file-size of the node's.
    @Test func aReturnOverMaxReturnSizeNamesTheCoordinatorsBound() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeTests().withNode(try options(sandbox)) { node in
                let task = ScanTask(input: 6, duration: 0, job: "t", text: "a.txt", timeout: 30)
                let request = Request.transfer(TransferRequest(
                    id: 6, task: task, file: FileHeader(size: 3, mode: 0o644, mtimeNanoseconds: 0),
                    returns: ["a.txt.out"], maxReturnSize: 2, cleanup: true)).line
                let (_, lines) = try await converse(node, request + fileLines(id: 6, [1, 2, 3]), replies: 1)
                let reply = try #require(lines.last.flatMap(jsonFields))
                #expect(reply["type"] as? String == "failure" && reply["code"] as? String == "file-too-large", "\(lines)")
                let message = reply["message"] as? String ?? ""
                #expect(message.contains("the coordinator's max_return_size"), "\(message)")
                #expect(!message.contains("--max-file-size"), "\(message)")
            }
        }
    }
}
