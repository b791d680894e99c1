import SkyNetRuntime

/// Authenticated lines (docs/PROTOCOL.md): after a token handshake every line is
/// `SEQ SP MAC SP JSON`, where SEQ counts the lines of its direction from 0 in decimal and MAC
/// is the first 16 bytes of HMAC-SHA256(direction's key, SEQ as 8 bytes big-endian ‖ JSON),
/// in lowercase hex. The sequence number makes a replayed, dropped or reordered line fail as
/// surely as an altered one; it is also written out so the log can say which it was.
package struct LineSeal: Sendable {
    /// Bytes of the MAC on the wire (before hex).
    package static let macCount = 16
    /// The most bytes a seal adds to a line: 20 digits of sequence, the MAC in hex, two spaces.
    package static let maxOverhead = 20 + 2 * macCount + 2

    private let key: HMACSHA256
    /// The sequence number of the next line.
    package private(set) var sequence: UInt64 = 0

    package init(key: HMACSHA256) {
        self.key = key
    }

    /// `line` (a JSON line, newline included) with its sequence number and MAC in front.
    package mutating func seal(_ line: [UInt8]) -> [UInt8] {
        var mac = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))  // the 32-byte tag, kept on the stack
        line.withUnsafeBytes { bytes in
            let body = UnsafeRawBufferPointer(rebasing: bytes[..<(line.last == 0x0A ? bytes.count - 1 : bytes.count)])
            withUnsafeMutableBytes(of: &mac) { tag(body, sequence: sequence, into: $0.baseAddress.unsafelyUnwrapped) }
        }
        var sealed: [UInt8] = []
        sealed.reserveCapacity(Self.maxOverhead + line.count)
        Self.appendDecimal(sequence, to: &sealed)
        sealed.append(0x20)
        withUnsafeBytes(of: &mac) { tag in
            for byte in tag.prefix(Self.macCount) {
                sealed.append(Self.hexDigits[Int(byte >> 4)])
                sealed.append(Self.hexDigits[Int(byte & 0x0F)])
            }
        }
        sealed.append(0x20)
        sealed.append(contentsOf: line)
        sequence += 1
        return sealed
    }

    /// The JSON of an authenticated line (without its newline), or why it must be refused.
    ///
    /// Only the canonical form opens (no leading zero, lowercase hex, single spaces), so that
    /// any byte changed on the way, even to a form that means the same, closes the connection.
    package mutating func open(_ line: Data) -> Result<Data, Rejection> {
        let verdict: Result<Int, Rejection> = line.withUnsafeBytes { bytes in
            var mac = (UInt64(0), UInt64(0))
            let parsed = withUnsafeMutableBytes(of: &mac) { Self.parse(bytes, mac: $0) }
            guard let (received, bodyStart) = parsed else { return .failure(.missing) }
            // The MAC first, over the number the line claims: a forged line is called forged,
            // and only a genuine line of the peer's can be called replayed or out of order.
            var expected = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
            withUnsafeMutableBytes(of: &expected) {
                tag(UnsafeRawBufferPointer(rebasing: bytes[bodyStart...]), sequence: received, into: $0.baseAddress.unsafelyUnwrapped)
            }
            let equal = withUnsafeBytes(of: &mac) { given in
                withUnsafeBytes(of: &expected) { Secrets.equal(given, $0.prefix(Self.macCount)) }
            }
            guard equal else { return .failure(.wrongMAC(received)) }
            guard received >= sequence else { return .failure(.replayed(received)) }
            guard received == sequence else { return .failure(.outOfOrder(received, expected: sequence)) }
            return .success(bodyStart)
        }
        return verdict.map { bodyStart in
            sequence += 1
            return line.subdata(in: (line.startIndex + bodyStart)..<line.endIndex)
        }
    }

    /// `open` for bytes in any collection (tests, small callers).
    package mutating func open(_ line: some Collection<UInt8>) -> Result<[UInt8], Rejection> {
        open(Data(line)).map { Array($0) }
    }

    /// `SEQ SP MAC SP`: the sequence number and where the JSON starts, with the MAC's bytes
    /// written to `mac`; nil unless the line starts in exactly the canonical form.
    private static func parse(_ bytes: UnsafeRawBufferPointer, mac: UnsafeMutableRawBufferPointer) -> (UInt64, Int)? {
        var index = 0, received: UInt64 = 0
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            guard index < 20, !(index == 1 && bytes[0] == 0x30) else { return nil }  // no leading zero
            let (times10, overflow1) = received.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = times10.addingReportingOverflow(UInt64(bytes[index] - 0x30))
            guard !overflow1, !overflow2 else { return nil }
            received = next
            index += 1
        }
        let macStart = index + 1, bodyStart = macStart + 2 * macCount + 1
        guard index > 0, bytes.count >= bodyStart, bytes[index] == 0x20, bytes[bodyStart - 1] == 0x20 else { return nil }
        for offset in 0..<macCount {
            guard let high = lowerHexValue(bytes[macStart + 2 * offset]),
                  let low = lowerHexValue(bytes[macStart + 2 * offset + 1]) else { return nil }
            mac[offset] = high << 4 | low
        }
        return (received, bodyStart)
    }

    private static func lowerHexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `value` in decimal, with no Foundation or String on the way.
    private static func appendDecimal(_ value: UInt64, to bytes: inout [UInt8]) {
        guard value >= 10 else { return bytes.append(0x30 + UInt8(value)) }
        appendDecimal(value / 10, to: &bytes)
        bytes.append(0x30 + UInt8(value % 10))
    }

    /// Why a line was refused: each closes the connection.
    package enum Rejection: Error, Equatable, CustomStringConvertible {
        case missing
        case replayed(UInt64)
        case outOfOrder(UInt64, expected: UInt64)
        case wrongMAC(UInt64)

        package var description: String {
            switch self {
            case .missing: "a line without a sequence number and MAC on an authenticated connection"
            case .replayed(let sequence): "a replayed line (sequence \(sequence) was already received)"
            case .outOfOrder(let sequence, let expected): "a line out of order (sequence \(sequence), expected \(expected))"
            case .wrongMAC(let sequence): "a line whose MAC is wrong (sequence \(sequence)): altered, or not from the peer"
            }
        }
    }

    /// The full 32-byte HMAC over the sequence number (8 bytes, big-endian) and `body`.
    private func tag(_ body: UnsafeRawBufferPointer, sequence: UInt64, into tag: UnsafeMutableRawPointer) {
        key.tag(into: tag) { hash in
            withUnsafeBytes(of: sequence.bigEndian) { hash.update($0) }
            hash.update(body)
        }
    }
}
