/// This process's file mode creation mask (`umask`), which the files and directories it makes
/// for a person (returned files) follow, as `cp` does.
///
/// Read once from the `Umask:` line of `/proc/self/status`: `umask(2)` reads the mask only by
/// setting it, and another thread making a file in that moment would get the wrong one. Where
/// there is no such line (no `/proc`: Darwin, or a kernel before 4.7), 022.
package enum Umask {
    /// The mask, read at its first use.
    package static let current: Int = read() ?? 0o022

    /// The mask `/proc/self/status` gives; nil when it cannot be read.
    static func read() -> Int? {
        guard let file = try? DirectoryHandle.open("/proc/self").openFile("status") else { return nil }
        defer { file.close() }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 16 {  // the file is a few KiB: bounded all the same
            let count = (try? buffer.withUnsafeMutableBytes { try file.read(into: $0, at: Int64(bytes.count)) }) ?? 0
            if count == 0 { break }
            bytes += buffer.prefix(count)
        }
        return parse(String(decoding: bytes, as: UTF8.self))
    }

    /// The octal value of the `Umask:` line in `status` (`Umask:\t0022`), nil without one.
    static func parse(_ status: String) -> Int? {
        for line in status.split(separator: "\n") where line.hasPrefix("Umask:") {
            let digits = line.dropFirst("Umask:".count).drop { $0 == " " || $0 == "\t" }
            guard let mask = Int(digits, radix: 8), (0...0o777).contains(mask) else { return nil }
            return mask
        }
        return nil
    }
}
