/// Sizes as people read them in messages: `2.0 GiB`, `512 KiB`, `12 bytes`, and the whole
/// mebibytes of a `no space` message.
package enum ByteCount {
    static let mebibyte: Int64 = 1 << 20

    /// In the largest binary unit it reaches: whole when exact, else one decimal.
    package static func approximate(_ bytes: Int64) -> String {
        let units: [(shift: Int64, name: String)] = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")]
        guard let unit = units.first(where: { bytes >= 1 << $0.shift }) else { return "\(bytes) bytes" }
        let size = Int64(1) << unit.shift
        if bytes % size == 0 { return "\(bytes / size) \(unit.name)" }
        // Tenths from the remainder: no product of the whole count can overflow.
        var whole = bytes / size, tenths = (bytes % size * 10 + size / 2) / size
        if tenths == 10 { (whole, tenths) = (whole + 1, 0) }
        return "\(whole).\(tenths) \(unit.name)"
    }

    /// `12` for 12.9 MiB: free space, rounded down.
    static func mebibytesDown(_ bytes: Int64) -> Int64 { max(0, bytes) / mebibyte }

    /// `41` for 40.1 MiB: space needed, rounded up, so that a refusal never looks as if the
    /// file fitted.
    static func mebibytesUp(_ bytes: Int64) -> Int64 {
        let (whole, part) = max(0, bytes).quotientAndRemainder(dividingBy: mebibyte)
        return whole + (part > 0 ? 1 : 0)
    }
}
