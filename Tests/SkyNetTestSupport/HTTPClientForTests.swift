import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetHTTP
@testable import SkyNetRuntime
@testable import SkyNetTransport

/// A raw HTTP client for the server tests: bytes in, bytes out, on threads of its own.
package enum HTTPClientForTests {
    /// A parsed response: status, headers (names lowercased), body.
    package struct Response {
        package let status: Int
        package let headers: [String: String]
        package let body: [UInt8]
        package var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Connects to the server on 127.0.0.1.
    package static func connect(_ server: HTTPServer) async throws -> Socket {
        try await onOwnThread(named: "test-http-connect") {
            try Socket.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(10))
        }
    }

    /// Connects, sends `request`, reads until the server closes (or `silence` passes) and
    /// closes; all on one thread, so that no wait for the cooperative pool comes between the
    /// connect and the request (the server's head deadline runs from the connect).
    package static func exchange(_ server: HTTPServer, _ request: String, silence: Duration = .seconds(20)) async throws -> [UInt8] {
        let port = server.port
        return try await onOwnThread(named: "test-http-exchange") {
            let socket = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(10))
            defer { socket.close() }
            _ = try socket.send(Array(request.utf8), wait: true)
            return readToEnd(socket, silence: silence)
        }
    }

    /// `exchange`, parsed.
    package static func get(_ server: HTTPServer, _ request: String) async throws -> Response {
        let bytes = try await exchange(server, request)
        guard let response = parse(bytes) else { throw TestFailure("unparsable response: \(String(decoding: bytes, as: UTF8.self))") }
        return response
    }

    /// Blocking: reads until the peer closes, an error, or `silence` without a byte.
    package static func readToEnd(_ socket: Socket, silence: Duration, limit: Int = 64 << 20) -> [UInt8] {
        socket.setReceiveTimeout(silence)
        var bytes: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        while bytes.count < limit, let count = try? socket.receive(into: chunk), count > 0 {
            bytes += chunk[..<count]
        }
        return bytes
    }

    /// Blocking: reads until `done(bytes so far)` holds, the peer closes, or `silence` passes.
    package static func read(_ socket: Socket, silence: Duration, until done: ([UInt8]) -> Bool) -> [UInt8] {
        socket.setReceiveTimeout(silence)
        var bytes: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        while !done(bytes), let count = try? socket.receive(into: chunk), count > 0 {
            bytes += chunk[..<count]
        }
        return bytes
    }

    /// Splits a response into status line, headers and body; nil when it is not one.
    package static func parse(_ bytes: [UInt8]) -> Response? {
        let separator = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else { return nil }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, statusParts[0] == "HTTP/1.1", let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: headers, body: Array(bytes[(end + 4)...]))
    }
}

package struct TestFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// Runs `body` with a started server and always stops it.
package func withHTTPServer(_ configuration: HTTPServer.Configuration = .init(), routes: [String: HTTPRoute] = testRoutes,
                    _ body: (HTTPServer) async throws -> Void) async throws {
    let server = try await HTTPServer.start(configuration, routes: routes)
    do {
        try await body(server)
        await server.stop()
    } catch {
        await server.stop()
        throw error
    }
}

package let testPage = Array("<!doctype html><title>SkyNet</title><p>hello</p>".utf8)
package let testRoutes: [String: HTTPRoute] = [
    "/": .fixed(contentType: "text/html; charset=utf-8", testPage),
    "/state": .content(contentType: "application/json") { Array(#"{"completed":3}"#.utf8) },
    "/events": .eventStream,
]
