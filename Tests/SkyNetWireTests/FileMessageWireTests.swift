import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNetAuth
@testable import SkyNetRuntime
@testable import SkyNetWire
@testable import SkyNetWork

/// The file messages on the wire: round trips, the `data` fast path against the
/// general parser, and what a node or a coordinator refuses.
@Suite(.onOwnThread) struct FileMessageWireTests {
    private let taskID = UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8")!
    private let header = FileHeader(size: 4_194_304, mode: 0o644, mtimeNanoseconds: 1_732_441_234_123_456_789)

    private func requestError(_ text: String) -> WireError? {
        do { _ = try Request.decode(Data(text.utf8)); return nil } catch { return error }
    }

    private func replyError(_ text: String) -> WireError? {
        do { _ = try Reply.decode(Data(text.utf8)); return nil } catch { return error }
    }

    private func transferLine(_ extra: String, input: String = "photos/a.jpg") -> String {
        #"{"type":"transfer","id":7,"job":"t","task":{"id":"\#(taskID.uuidString)","sector":3,"input":"\#(input)","timeout":30}\#(extra)}"#
    }

    @Test func everyFileRequestSurvivesARoundTrip() throws {
        let task = ScanTask(id: taskID, input: 3, duration: 0, job: "t", text: "photos/a b'\"é.jpg", timeout: 30)
        let requests: [Request] = [
            .transfer(TransferRequest(id: 7, task: task, file: header, returns: ["photos/a.jpg.out", "x y.png"],
                                      maxReturnSize: 1 << 30, cleanup: true)),
            .transfer(TransferRequest(id: 8, task: ScanTask(id: taskID, input: -1, duration: 0, job: "t", text: "/not a path\n"),
                                      file: nil, returns: [], maxReturnSize: 0, cleanup: false)),
            .basefile(BasefileRequest(id: 3, path: "bin/process.sh", file: FileHeader(size: 0, mode: 0o755, mtimeNanoseconds: -5))),
            .chunk(FileChunk(id: 7, file: nil, offset: 262_144, bytes: Data([0, 1, 2, 255]))),
            .fileEnd(FileEnd(id: 7, file: nil, sha256: Array(0..<32))),
        ]
        for request in requests {
            let line = request.line
            #expect(line.last == 10 && !line.dropLast().contains(10))
            #expect(try Request.decode(Data(line.dropLast())) == request)
        }
        let transfer = String(decoding: requests[0].line, as: UTF8.self)
        #expect(transfer.contains(#""file":{"size":4194304,"mode":420,"mtime_ns":1732441234123456789}"#))
        #expect(transfer.contains(#""returns":["photos/a.jpg.out","x y.png"],"max_return_size":1073741824,"cleanup":true}"#))
    }

    @Test func everyFileReplySurvivesARoundTrip() throws {
        let replies: [Reply] = [
            .welcome(version: 1, name: "beta", capacity: 4, jobs: ["t": "cp {} {}.out"], idle: 60,
                     files: FileSupport(version: 1, maxFileSize: 1 << 30)),
            .returnFile(ReturnHeader(id: 7, file: 63, header: header)),
            .chunk(FileChunk(id: 7, file: 0, offset: 0, bytes: Data("x".utf8))),
            .fileEnd(FileEnd(id: 7, file: 1, sha256: Array(repeating: 0xAB, count: 32))),
            .stored(id: 3),
        ]
        for reply in replies {
            #expect(try Reply.decode(Data(reply.line.dropLast())) == reply)
        }
        #expect(String(decoding: replies[0].line, as: UTF8.self).hasSuffix(#""files":{"version":1,"max_file_size":1073741824}}"# + "\n"))
        #expect(replies[1].streamID == 7 && replies[1].requestID == nil)
        #expect(replies[4].streamID == nil && replies[4].requestID == 3)
        // A welcome without files (an older node) offers none.
        let old = try Reply.decode(Data(#"{"type":"welcome","version":1,"name":"b","capacity":2}"#.utf8))
        #expect(old == .welcome(version: 1, name: "b", capacity: 2, jobs: nil, idle: nil, files: nil))
    }

    @Test func theDataFastPathGivesWhatTheGeneralParserGives() throws {
        let seed = FuzzSeed(0xDA7A)
        var random = seed.random
        for round in 0..<300 {
            let count = round == 0 ? maxChunkBytes : Int.random(in: 1...2048, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let file: Int? = round % 2 == 0 ? nil : Int.random(in: 0...63, using: &random)
            let offset = Int64.random(in: 0...(1 << 40), using: &random)
            let line = Data(bytes.withUnsafeBytes { FileChunk.line(id: round, file: file, offset: offset, bytes: $0) }.dropLast())
            let fast = CanonicalLine.chunk(line, inReply: file != nil)
            let general = try WireFields(line).fileChunk(inReply: file != nil)
            #expect(fast != nil, "\(seed)")
            #expect(fast == general, "\(seed)")
            #expect(general.bytes == Data(bytes), "\(seed)")
        }
        // Another field order is no fast line, and reads the same the long way.
        let reordered = #"{"id":4,"type":"data","data":"AAEC","offset":9}"#
        #expect(CanonicalLine.chunk(Data(reordered.utf8), inReply: false) == nil)
        #expect(try Request.decode(Data(reordered.utf8)) == .chunk(FileChunk(id: 4, file: nil, offset: 9, bytes: Data([0, 1, 2]))))
    }

    @Test func oversizedBadlyEncodedAndMisnumberedChunksAreRefused() {
        let tooBig = String(decoding: Base64.encode([UInt8](repeating: 7, count: maxChunkBytes + 1)), as: UTF8.self)
        let cases = [
            #"{"type":"data","id":7,"offset":0,"data":"\#(tooBig)"}"#,
            #"{"type":"data","id":7,"offset":0,"data":"AA*="}"#,
            #"{"type":"data","id":7,"offset":0,"data":"AA== "}"#,
            #"{"type":"data","id":7,"offset":0,"data":""}"#,
            #"{"type":"data","id":7,"offset":1e3,"data":"AAEC"}"#,
            #"{"type":"data","id":7,"offset":-1,"data":"AAEC"}"#,
            #"{"type":"data","id":7,"file":0,"offset":0,"data":"AAEC"}"#,
            #"{"type":"end","id":7,"sha256":"abc"}"#,
        ]
        for line in cases {
            let error = requestError(line)
            #expect(error?.code == .badRequest, "\(line.prefix(80))")
            #expect(error?.id == 7, "\(line.prefix(80))")
        }
        #expect(replyError(#"{"type":"data","id":7,"offset":0,"data":"AAEC"}"#)?.code == .badRequest)  // a reply needs "file"
        #expect(replyError(#"{"type":"return","id":7,"file":64,"size":1,"mode":420,"mtime_ns":0}"#)?.code == .badRequest)
        #expect(replyError(#"{"type":"return","id":7,"file":0,"size":-1,"mode":420,"mtime_ns":0}"#)?.code == .badRequest)
    }

    @Test func unsafePathsInATransferOrABasefileAreRefusedNamingTheField() {
        let file = #","file":{"size":1,"mode":420,"mtime_ns":0}"#
        #expect(requestError(transferLine(#","returns":["../x"]"#))?.message == #"returns[0] "../x": a ".." component is refused"#)
        #expect(requestError(transferLine(#","returns":["ok","a/../../etc/x"]"#))?.message
            == #"returns[1] "a/../../etc/x": a ".." component is refused"#)
        #expect(requestError(transferLine(#","returns":["/etc/passwd"]"#))?.message?.hasPrefix(#"returns[0] "/etc/passwd": an absolute path is refused"#) == true)
        #expect(requestError(transferLine(#","returns":["a","a"]"#))?.code == .badRequest)
        #expect(requestError(transferLine(file, input: "../a"))?.message == #"task.input "../a": a ".." component is refused"#)
        #expect(requestError(transferLine(file, input: "/etc/x"))?.code == .badRequest)
        #expect(requestError(transferLine(file, input: String(repeating: "a/", count: 2100)))?.code == .badRequest)
        #expect(requestError(transferLine(#","file":{"size":1,"mode":4096,"mtime_ns":0}"#))?.code == .badRequest)
        #expect(requestError(transferLine(#","file":{"size":1,"mode":420,"mtime_ns":1.5}"#))?.code == .badRequest)
        #expect(requestError(transferLine(#","cleanup":"yes""#))?.code == .badRequest)
        let many = (0...64).map { "\"f\($0)\"" }.joined(separator: ",")
        #expect(requestError(transferLine(#","returns":[\#(many)]"#))?.code == .badRequest)
        // Without a file the input is plain text: any text a job takes.
        #expect(requestError(transferLine("", input: "../not a path")) == nil)
        #expect(requestError(#"{"type":"basefile","id":3,"path":"../x","size":1,"mode":420,"mtime_ns":0}"#)?.message
            == #"path "../x": a ".." component is refused"#)
        #expect(requestError(#"{"type":"basefile","id":3,"path":"a\nb","size":1,"mode":420,"mtime_ns":0}"#)?.code == .badRequest)
    }

    @Test func aFullChunkLineStaysWellUnderTheLineLimit() {
        let bytes = [UInt8](repeating: 0xFF, count: maxChunkBytes)
        let line = bytes.withUnsafeBytes { FileChunk.line(id: Int.max, file: 63, offset: Int64(Int.max), bytes: $0) }
        #expect(line.count < 360 * 1024)
        #expect(line.count < 1 << 20)
    }
}

/// The binary `data` message of files version 2: what it is made of, byte by byte, and every
/// way it can be wrong refused with a `bad-request` rather than read.
@Suite struct BinaryChunkWireTests {
    @Test func aChunkRoundTripsWithAnyIdNegativeIncluded() throws {
        for (id, file) in [(0, nil), (-1, 5), (Int.max, 63), (Int.min, nil)] as [(Int, Int?)] {
            let message = [UInt8](0..<3).withUnsafeBytes { FileChunk.message(id: id, file: file, offset: 1 << 40, bytes: $0) }
            #expect(message.count == FileChunk.binaryHeaderCount + 3 && message[0] == 0 && message[9] == UInt8(file ?? 0xFF))
            // A client's chunk (no file) is a request; a node's (with its file) a reply.
            var decoded: FileChunk?
            if file == nil, case .chunk(let chunk) = try Request.decode(Data(message)) { decoded = chunk }
            if file != nil, case .chunk(let chunk) = try Reply.decode(Data(message)) { decoded = chunk }
            #expect(decoded == FileChunk(id: id, file: file, offset: 1 << 40, bytes: Data([0, 1, 2])))
        }
    }

    @Test func aMalformedBinaryChunkIsABadRequest() {
        let header: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 7]
        let cases: [(message: [UInt8], inReply: Bool, id: Int?)] = [
            ([0], false, nil),                                                       // no header
            (header + [0xFF] + [UInt8](repeating: 0, count: 8), false, nil),          // no bytes
            (header + [3] + [UInt8](repeating: 0, count: 8) + [1], false, 7),        // a file on a request
            (header + [0xFF] + [UInt8](repeating: 0, count: 8) + [1], true, 7),      // none on a reply
            (header + [64] + [UInt8](repeating: 0, count: 8) + [1], true, 7),        // past 63
            (header + [0xFF] + [0x80] + [UInt8](repeating: 0, count: 7) + [1], false, 7),  // offset over 2^63 - 1
            (header + [0xFF] + [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 1, count: maxChunkBytes + 1), false, 7),
        ]
        for (message, inReply, id) in cases {
            #expect { _ = try FileChunk.decode(binary: Data(message), inReply: inReply) } throws: { error in
                (error as? WireError)?.code == .badRequest && (error as? WireError)?.id == id
            }
        }
    }
}
