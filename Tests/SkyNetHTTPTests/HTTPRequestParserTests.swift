@testable import SkyNet
@testable import SkyNetHTTP
import SkyNetTestSupport
import Testing

/// The pure request-head parser: no socket.
@Suite struct HTTPRequestParserTests {
    func parse(_ text: String) -> HTTPRequestParser.Outcome {
        var parser = HTTPRequestParser()
        return parser.feed(Array(text.utf8))
    }

    @Test func aGetWithHeadersParsesToMethodPathQueryAndLowercasedHeaders() {
        let outcome = parse("GET /events?token=x HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept:  text/event-stream \r\n\r\n")
        guard case .complete(let request) = outcome else { Issue.record("\(outcome)"); return }
        #expect(request.method == "GET" && request.path == "/events" && request.query == "token=x")
        #expect(request.version == "HTTP/1.1")
        #expect(request.headers.map(\.name) == ["host", "accept"])
        #expect(request.header("ACCEPT") == "text/event-stream")
    }

    @Test func aHeadFedOneByteAtATimeCompletesOnlyAtTheEmptyLine() {
        var parser = HTTPRequestParser()
        let bytes = Array("HEAD / HTTP/1.0\nX-A: 1\n\n".utf8)
        for byte in bytes.dropLast() { #expect(parser.feed([byte]) == .needMore) }
        guard case .complete(let request) = parser.feed([bytes.last!]) else { Issue.record("not complete"); return }
        #expect(request.method == "HEAD" && request.headers.count == 1)
    }

    @Test(arguments: [
        "garbage\r\n\r\n", "GET /\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET / HTTP/1.1 extra\r\n\r\n",
        "GET http://example.test/ HTTP/1.1\r\n\r\n", "G(T / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nno colon\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", "GET / HTTP/1.1\r\nA: 1\r\n folded\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n",
    ])
    func malformedHeadsAreRefusedWith400(_ text: String) {
        #expect(parse(text) == .refused(.badRequest))
    }

    @Test func aRequestLineOver8KiBIsRefusedWith414EvenBeforeItEnds() {
        let long = "GET /" + String(repeating: "a", count: 8 * 1024) + " HTTP/1.1"
        #expect(parse(long) == .refused(.uriTooLong))
        #expect(parse(long + "\r\n\r\n") == .refused(.uriTooLong))
        // Just under the limit is fine.
        let fits = "GET /" + String(repeating: "a", count: 8 * 1024 - 20) + " HTTP/1.1\r\n\r\n"
        guard case .complete = parse(fits) else { Issue.record("a line under 8 KiB was refused"); return }
    }

    @Test func headersOver16KiBOrOver100LinesAreRefusedWith431() {
        let big = "GET / HTTP/1.1\r\nX-Big: " + String(repeating: "b", count: 16 * 1024) + "\r\n\r\n"
        #expect(parse(big) == .refused(.headerFieldsTooLarge))
        let unfinished = "GET / HTTP/1.1\r\nX-Big: " + String(repeating: "b", count: 16 * 1024)
        #expect(parse(unfinished) == .refused(.headerFieldsTooLarge))
        let lines = (0..<101).map { "X-\($0): 1\r\n" }.joined()
        #expect(parse("GET / HTTP/1.1\r\n" + lines + "\r\n") == .refused(.headerFieldsTooLarge))
        let hundred = (0..<100).map { "X-\($0): 1\r\n" }.joined()
        guard case .complete = parse("GET / HTTP/1.1\r\n" + hundred + "\r\n") else { Issue.record("100 lines refused"); return }
    }
}
