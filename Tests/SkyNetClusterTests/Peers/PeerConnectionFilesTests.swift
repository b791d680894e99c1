import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetTransfer
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A coordinator's link and files: the welcome's offer, a transfer's returned file streamed to
/// its sink and written whole, and a file nobody asked for failing its request.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct PeerConnectionFilesTests {
    /// A node that offers files and answers a transfer that asks for returns with one returned
    /// file, `hello`, and one that asks for none with a chunk it was never asked for.
    private func startNode() async throws -> Listener {
        let listener = try await Listener.bind(host: "127.0.0.1", port: 0)
        try listener.start { socket, peer in
            let connection = Connection(socket: socket, peer: peer)
            connection.start(onEvent: { event in
                guard case .line(let line) = event, let request = try? Request.decode(line) else { return }
                switch request {
                case .hello:
                    try? connection.send(Reply.welcome(version: 1, name: "beta", capacity: 2, jobs: ["t": "cp {} {}.out"],
                                                       files: FileSupport(maxFileSize: 1 << 30)).line)
                case .transfer(let transfer) where !transfer.returns.isEmpty:
                    let id = transfer.id
                    let bytes = Array("hello".utf8)
                    try? connection.send(Reply.returnFile(ReturnHeader(id: id, file: 0, header: FileHeader(size: 5, mode: 0o755, mtimeNanoseconds: 7_000_000_001))).line)
                    try? connection.send(Reply.chunk(FileChunk(id: id, file: 0, offset: 0, bytes: Data(bytes))).line)
                    try? connection.send(Reply.fileEnd(FileEnd(id: id, file: 0, sha256: SHA256.hash(bytes))).line)
                    try? connection.send(Reply.result(id: id, task: transfer.task.id, result: "").line)
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
                    incoming = IncomingFile(file: try directory.createFile("out"), header: header.header, name: "out", digests: true)
                    state.withLock { $0.append("return") }
                case .chunk(let chunk):
                    try incoming?.append(chunk)
                    state.withLock { $0.append("data") }
                case .fileEnd(let end):
                    try incoming?.finish(end)
                    state.withLock { $0.append("end") }
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
        let id = peer.nextID()
        peer.stream(id, to: sink)
        let task = ScanTask(input: 0, job: "t", text: "a")
        let transfer = TransferRequest(id: id, task: task, file: nil, returns: ["a.out"], maxReturnSize: 1 << 20, cleanup: true)
        let reply = try await peer.request(id: id, sending: { try peer.connection.send(Request.transfer(transfer).line) },
                                           timeout: .seconds(20), liveness: nil)
        #expect(reply == .result(id: id, task: task.id, result: ""))
        #expect(sink.state.withLock { $0 } == ["return", "data", "end"])
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
        let id = peer.nextID()
        let transfer = TransferRequest(id: id, task: task, file: nil, returns: [], maxReturnSize: 0, cleanup: false)
        await #expect {
            try await peer.request(id: id, sending: { try peer.connection.send(Request.transfer(transfer).line) },
                                   timeout: .seconds(20), liveness: nil)
        } throws: { ($0 as? ScanFailure)?.code == .badReply }
    }

    /// A node that answers no ping but, asked for a job, streams lines for `flow` and then
    /// falls silent: bytes that move keep its late pongs from failing the work.
    private func startBusyNode(flow: Duration) async throws -> Listener {
        let listener = try await Listener.bind(host: "127.0.0.1", port: 0)
        try listener.start { socket, peer in
            let connection = Connection(socket: socket, peer: peer)
            connection.start(onEvent: { event in
                guard case .line(let line) = event, let request = try? Request.decode(line) else { return }
                switch request {
                case .hello:
                    try? connection.send(Reply.welcome(version: 1, name: "busy", capacity: 2, jobs: ["t": "t"]).line)
                case .job:
                    startThread(named: "test-flow") {
                        let end = ContinuousClock.now + flow
                        while ContinuousClock.now < end {
                            // A chunk of a transfer nobody waits for: dropped, but bytes on the link.
                            try? connection.send(Reply.chunk(FileChunk(id: 999, file: 0, offset: 0, bytes: Data(count: 4096))).line)
                            sleepOnThisThread(for: .milliseconds(20))
                        }
                    }
                default:
                    break
                }
            })
        }
        return listener
    }

    @Test func aPeerWhosePongsAreLateButWhoseBytesMoveIsNotDeclaredUnresponsive() async throws {
        let listener = try await startBusyNode(flow: .seconds(5))
        defer { listener.stop() }
        let peer = try await PeerConnection.open(name: "busy", host: "127.0.0.1", port: listener.port, token: nil, timeout: .seconds(10))
        defer { peer.close() }
        let started = ContinuousClock.now, id = peer.nextID()  // the link's own pings take ids from it too
        await #expect(throws: PeerUnresponsive.self) {
            try await peer.request(id: id, .job(id: id, task: ScanTask(input: 0, job: "t", text: "x")), liveness: .seconds(2))
        }
        // Unresponsive only once the bytes stopped (at 5 s), not at the first late pong (2 s).
        #expect(ContinuousClock.now - started >= .seconds(4.5))
    }
}
