import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork

/// A coordinator's link and files: the welcome's offer, a transfer's returned file streamed to
/// its sink and written whole, and a file nobody asked for failing its request.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct PeerConnectionFilesTests {
    /// A node that offers files and answers transfer 1 with one returned file, `hello`, and
    /// transfer 2 with a chunk it was never asked for.
    private func startNode() async throws -> Listener {
        let listener = try await Listener.bind(host: "127.0.0.1", port: 0)
        listener.start { socket, peer in
            let connection = Connection(socket: socket, peer: peer)
            connection.start(onEvent: { event in
                guard case .line(let line) = event, let request = try? Request.decode(line) else { return }
                switch request {
                case .hello:
                    try? connection.send(Reply.welcome(version: 1, name: "beta", capacity: 2, jobs: ["t": "cp {} {}.out"],
                                                       files: FileSupport(maxFileSize: 1 << 30)).line)
                case .transfer(let transfer) where transfer.id == 1:
                    let bytes = Array("hello".utf8)
                    try? connection.send(Reply.returnFile(ReturnHeader(id: 1, file: 0, header: FileHeader(size: 5, mode: 0o755, mtimeNanoseconds: 7_000_000_001))).line)
                    try? connection.send(Reply.chunk(FileChunk(id: 1, file: 0, offset: 0, bytes: Data(bytes))).line)
                    try? connection.send(Reply.fileEnd(FileEnd(id: 1, file: 0, sha256: SHA256.hash(bytes))).line)
                    try? connection.send(Reply.result(id: 1, task: transfer.task.id, result: "").line)
                case .transfer(let transfer):
                    try? connection.send(Reply.chunk(FileChunk(id: transfer.id, file: 0, offset: 0, bytes: Data("x".utf8))).line)
                default:
                    break
                }
            })
        }
        return listener
    }

    /// Writes a returned file with an `IncomingFile`, on the reader thread, as a sink does.
    private final class Sink: ReplyStream, @unchecked Sendable {
        // @unchecked Sendable: `state` is behind its lock; `incoming` is touched on the one reader thread only.
        let directory: DirectoryHandle
        let state = Locked<[String]>([])
        var incoming: IncomingFile?

        init(directory: DirectoryHandle) { self.directory = directory }

        func receive(_ reply: Reply) {
            do {
                switch reply {
                case .returnFile(let header):
                    incoming = IncomingFile(file: try directory.createFile("out"), header: header.header, name: "out")
                    state.withLock { $0.append("return") }
                case .chunk(let chunk):
                    try incoming?.append(chunk)
                    state.withLock { $0.append("data") }
                case .fileEnd(let end):
                    let returned = try incoming?.finish(end)
                    state.withLock { $0.append("end \(returned?.size ?? -1)") }
                default:
                    state.withLock { $0.append("other") }
                }
            } catch {
                state.withLock { $0.append("error \(error)") }
            }
        }
    }

    @Test func aReturnedFileStreamsToItsSinkBeforeTheResultAndArrivesWhole() async throws {
        let listener = try await startNode()
        defer { listener.stop() }
        let peer = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: listener.port, token: nil, timeout: .seconds(10))
        defer { peer.close() }
        #expect(peer.files == FileSupport(version: 1, maxFileSize: 1 << 30))
        let (directory, path) = try DirectoryHandle.mkdtemp(in: NSTemporaryDirectory(), prefix: "skynet-sink-")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = Sink(directory: directory)
        peer.stream(1, to: sink)
        let task = ScanTask(input: 0, job: "t", text: "a")
        let transfer = TransferRequest(id: 1, task: task, file: nil, returns: ["a.out"], maxReturnSize: 1 << 20, cleanup: true)
        let reply = try await peer.request(id: 1, sending: { try peer.connection.send(Request.transfer(transfer).line) },
                                           timeout: .seconds(20), liveness: nil)
        #expect(reply == .result(id: 1, task: task.id, result: ""))
        #expect(sink.state.withLock { $0 } == ["return", "data", "end 5"])
        #expect(try String(contentsOfFile: path + "/out", encoding: .utf8) == "hello")
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "/out")
        #expect((attributes[.posixPermissions] as? Int) == 0o755)
    }

    @Test func aFileNobodyAskedForFailsItsRequestAsABadReply() async throws {
        let listener = try await startNode()
        defer { listener.stop() }
        let peer = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: listener.port, token: nil, timeout: .seconds(10))
        defer { peer.close() }
        let task = ScanTask(input: 0, job: "t", text: "a")
        let transfer = TransferRequest(id: 2, task: task, file: nil, returns: [], maxReturnSize: 0, cleanup: false)
        await #expect {
            try await peer.request(id: 2, sending: { try peer.connection.send(Request.transfer(transfer).line) },
                                   timeout: .seconds(20), liveness: nil)
        } throws: { ($0 as? ScanFailure)?.code == .badReply }
    }
}
