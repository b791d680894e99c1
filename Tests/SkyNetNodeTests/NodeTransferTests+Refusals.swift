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
            try await NodeHarness().withNode(try options(sandbox)) { node in
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

    /// A `scan` or `ping` whose id is that of a transfer still receiving its file is a
    /// `bad-request`: the transfer goes on and answers under its id alone.
    @Test func anIdOfAnUploadInFlightIsRefusedToAScan() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox)) { node in
                var lines = transfer(id: 5, input: "a.txt", size: 3, returns: ["a.txt.out"])
                lines += Request.scan(id: 5, task: ScanTask(input: 9, duration: 0)).line
                lines += fileLines(id: 5, [1, 2, 3])
                let (_, replies) = try await converse(node, lines, replies: 2)
                let fields = replies.compactMap(jsonFields).filter { ["error", "result", "failure"].contains($0["type"] as? String) }
                #expect(fields.count == 2, "\(replies)")
                #expect(fields.first?["code"] as? String == "bad-request" && fields.first?["id"] as? Int == 5, "\(replies)")
                #expect(fields.last?["type"] as? String == "result" && fields.last?["result"] as? String != "9", "\(replies)")
            }
        }
    }
}
