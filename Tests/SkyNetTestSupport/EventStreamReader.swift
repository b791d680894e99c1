import Foundation
@testable import SkyNetHTTP
@testable import SkyNetRuntime
@testable import SkyNetTransport

/// A client of an event stream (`/events`): opens it, reads its frames, parses them.
package enum EventStreamReader {
    package struct Frame: Equatable, Sendable {
        package let event: String
        package let data: String

        package init(event: String, data: String) {
            self.event = event
            self.data = data
        }
    }

    /// The stream's frames and comments (": …"), in order; the head is skipped when present.
    package static func frames(_ bytes: [UInt8]) -> (frames: [Frame], comments: [String]) {
        let head = HTTPResponse.eventStreamHead
        let body = bytes.starts(with: head) ? bytes[head.count...] : bytes[...]
        var frames: [Frame] = [], comments: [String] = []
        let text = String(decoding: body, as: UTF8.self)
        for block in text.components(separatedBy: "\n\n") where !block.isEmpty {
            let lines = block.components(separatedBy: "\n")
            if lines.allSatisfy({ $0.hasPrefix(":") }) { comments += lines; continue }
            guard lines.count >= 2, lines[0].hasPrefix("event: "), lines.dropFirst().allSatisfy({ $0.hasPrefix("data: ") }) else {
                comments.append("malformed: \(block)")
                continue
            }
            frames.append(Frame(event: String(lines[0].dropFirst(7)), data: lines.dropFirst().map { String($0.dropFirst(6)) }.joined(separator: "\n")))
        }
        return (frames, comments)
    }

    /// Opens /events and reads until `done` holds for the frames so far (or 20 s of silence).
    /// Connects and asks for the stream on one thread: no wait for the pool between the
    /// connect and the request, which the server's head deadline would count.
    package static func open(_ server: HTTPServer) async throws -> Socket {
        let port = server.port
        return try await onOwnThread(named: "test-sse-ask") {
            let socket = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(10))
            do {
                _ = try socket.send(Array("GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8), wait: true)
            } catch {
                socket.close()
                throw error
            }
            return socket
        }
    }

    package static func read(_ socket: Socket, until done: @escaping @Sendable ([Frame]) -> Bool) async throws -> (frames: [Frame], comments: [String]) {
        let bytes = try await onOwnThread(named: "test-sse-read") {
            HTTPClientForTests.read(socket, silence: .seconds(20)) { done(frames($0).frames) }
        }
        return frames(bytes)
    }
}
