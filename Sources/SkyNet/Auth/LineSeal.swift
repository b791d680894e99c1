/// Authenticated lines (docs/PROTOCOL.md): after a token handshake every line is
/// `SEQ SP MAC SP JSON`, where SEQ counts the lines of its direction from 0 in decimal and MAC
/// is the first 16 bytes of HMAC-SHA256(direction's key, SEQ as 8 bytes big-endian ‖ JSON),
/// in lowercase hex. The sequence number makes a replayed, dropped or reordered line fail as
/// surely as an altered one; it is also written out so the log can say which it was.
public struct LineSeal: Sendable {
    /// Bytes of the MAC on the wire (before hex).
    public static let macCount = 16
    /// The most bytes a seal adds to a line: 20 digits of sequence, the MAC in hex, two spaces.
    public static let maxOverhead = 20 + 2 * macCount + 2

    private let key: HMACSHA256
    /// The sequence number of the next line.
    public private(set) var sequence: UInt64 = 0

    public init(key: HMACSHA256) {
        self.key = key
    }

    /// `line` (a JSON line, newline included) with its sequence number and MAC in front.
    public mutating func seal(_ line: [UInt8]) -> [UInt8] {
        let body = line.last == 0x0A ? line.dropLast() : line[...]
        let mac = tag(body, sequence: sequence)
        var sealed = Array(String(sequence).utf8)
        sealed.reserveCapacity(sealed.count + 2 + 2 * Self.macCount + line.count)
        sealed.append(0x20)
        sealed.append(contentsOf: Secrets.hex(mac.prefix(Self.macCount)).utf8)
        sealed.append(0x20)
        sealed.append(contentsOf: line)
        sequence += 1
        return sealed
    }

    /// The JSON of an authenticated line (without its newline), or why it must be refused.
    public mutating func open(_ line: some Collection<UInt8>) -> Result<[UInt8], Rejection> {
        let bytes = Array(line)
        guard let space = bytes.firstIndex(of: 0x20), space > 0, space <= 20,
              bytes[..<space].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let received = UInt64(String(decoding: bytes[..<space], as: UTF8.self)),
              bytes.count > space + 1 + 2 * Self.macCount, bytes[space + 1 + 2 * Self.macCount] == 0x20,
              let mac = Secrets.bytes(fromHex: String(decoding: bytes[(space + 1)..<(space + 1 + 2 * Self.macCount)], as: UTF8.self))
        else { return .failure(.missing) }
        guard received >= sequence else { return .failure(.replayed(received)) }
        guard received == sequence else { return .failure(.outOfOrder(received, expected: sequence)) }
        let body = bytes[(space + 2 + 2 * Self.macCount)...]
        guard Secrets.equal(mac, tag(body, sequence: received).prefix(Self.macCount)) else {
            return .failure(.wrongMAC(received))
        }
        sequence += 1
        return .success(Array(body))
    }

    /// Why a line was refused: each closes the connection.
    public enum Rejection: Error, Equatable, CustomStringConvertible {
        case missing
        case replayed(UInt64)
        case outOfOrder(UInt64, expected: UInt64)
        case wrongMAC(UInt64)

        public var description: String {
            switch self {
            case .missing: "a line without a sequence number and MAC on an authenticated connection"
            case .replayed(let sequence): "a replayed line (sequence \(sequence) was already received)"
            case .outOfOrder(let sequence, let expected): "a line out of order (sequence \(sequence), expected \(expected))"
            case .wrongMAC(let sequence): "a line whose MAC is wrong (sequence \(sequence)): altered, or not from the peer"
            }
        }
    }

    private func tag(_ body: some Collection<UInt8>, sequence: UInt64) -> [UInt8] {
        key.tag { hash in
            withUnsafeBytes(of: sequence.bigEndian) { hash.update($0) }
            hash.update(Array(body))
        }
    }
}
