import Testing
@testable import SkyNetTransport

struct SocketAddressesTests {
    @Test func localhostResolvesToTheLoopbackAddress() async throws {
        let addresses = try await Socket.addresses(of: "localhost", port: 9001)
        #expect(addresses.contains("127.0.0.1"))
        #expect(addresses.allSatisfy { $0 == "127.0.0.1" || $0 == "::1" })
        #expect(addresses == Array(Set(addresses)).sorted())
    }

    @Test func aNumericAddressIsItsOwnAnswer() async throws {
        #expect(try await Socket.addresses(of: "127.0.0.1", port: 1) == ["127.0.0.1"])
        #expect(try await Socket.addresses(of: "::1", port: 1) == ["::1"])
    }

    @Test func anUnknownNameThrowsANamedError() async {
        // .invalid never resolves (RFC 2606).
        await #expect {
            _ = try await Socket.addresses(of: "no-such-host.invalid", port: 9001)
        } throws: { error in
            (error as? SocketError)?.operation == "resolve no-such-host.invalid"
        }
    }
}
