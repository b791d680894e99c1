import Foundation
import SkyNet

/// W14's files: `count` files of `bytes` each, seeded random (the same bytes every sitting),
/// named `f000`, `f001`, … in a temporary folder of their own, with the lists that name them
/// (`inputs-N.txt`: the first N names, one a line, relative to the folder).
struct BenchFiles {
    let folder: String
    let names: [String]
    let bytes: Int

    static func make(count: Int, bytes: Int, seed: UInt64) throws -> BenchFiles {
        let folder = NSTemporaryDirectory() + "skynet-bench-w14-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let files = BenchFiles(folder: folder, names: (0..<count).map { String(format: "f%03d", $0) }, bytes: bytes)
        do {
            var state = seed
            var words = [UInt64](repeating: 0, count: (bytes + 7) / 8)
            for name in files.names {
                for index in words.indices { words[index] = Self.splitMix(&state) }
                let data = words.withUnsafeBytes { Data($0.prefix(bytes)) }
                try data.write(to: URL(fileURLWithPath: files.path(name)))
            }
        } catch {
            files.remove()
            throw error
        }
        return files
    }

    func path(_ name: String) -> String { folder + "/" + name }

    /// Writes `inputs-N.txt` naming the first `count` files; returns its path.
    func inputs(first count: Int) throws -> String {
        let path = path("inputs-\(count).txt")
        try (names.prefix(count).joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Checks that each of the first `count` files came back, at `returned(name)`: every one
    /// of the right size, and every 20th byte for byte (a transfer that mixed files or cut one
    /// up shows there); then removes them all, so that the next run starts clean.
    func checkAndRemoveReturned(first count: Int, at returned: (String) -> String = { $0 + ".out" }) throws {
        let paths = names.prefix(count).map { (name: $0, path: returned($0)) }
        defer { for entry in paths { unlink(entry.path.hasPrefix("/") ? entry.path : path(entry.path)) } }
        for (index, entry) in paths.enumerated() {
            let copy = entry.path.hasPrefix("/") ? entry.path : path(entry.path)
            let size = (try? FileManager.default.attributesOfItem(atPath: copy)[.size] as? Int) ?? -1
            guard size == bytes else { throw BenchError("\(copy): \(size < 0 ? "missing" : "\(size) bytes"), not \(bytes)") }
            if index % 20 == 0 {
                guard try Data(contentsOf: URL(fileURLWithPath: copy)) == Data(contentsOf: URL(fileURLWithPath: path(entry.name))) else {
                    throw BenchError("\(copy) differs from \(entry.name)")
                }
            }
        }
    }

    func remove() { try? FileManager.default.removeItem(atPath: folder) }

    /// SplitMix64: fast, seeded, and random enough that no link compresses it.
    private static func splitMix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
