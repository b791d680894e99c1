import Foundation
import SkyNet
import SkyNetLocalHosts
import SkyNetRuntime

/// Files of seeded random bytes for the tests of files that travel, their SHA-256
/// as `sha256sum` computes it (another program's hash, not the product's own: the product is
/// checked against it), byte-for-byte comparison and listings of a folder's tree.
package enum RandomFiles {
    /// What a test needed of a file and could not get.
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package let description: String

        package init(description: String) {
            self.description = description
        }
    }

    /// Writes `size` bytes drawn from `seed` at `path` (its folders made), 1 MiB at a time, so a
    /// 100 MiB file never sits in memory; returns `path`. The same seed gives the same bytes.
    @discardableResult
    package static func write(_ path: String, size: Int, seed: UInt64) throws -> String {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw Failure(description: "cannot create \(path)")
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var random = SeededRandom(seed: seed)
        var words = [UInt64](repeating: 0, count: (1 << 20) / 8)
        var left = size
        while left > 0 {
            let count = min(left, 1 << 20)
            words.withUnsafeMutableBufferPointer { buffer in
                for index in 0..<((count + 7) / 8) { buffer[index] = random.next() }
            }
            try handle.write(contentsOf: words.withUnsafeBytes { Data($0.prefix(count)) })
            left -= count
        }
        return path
    }

    /// The SHA-256 of each of `paths`, in their order, in lowercase hex, as `sha256sum` prints it.
    package static func sha256(_ paths: [String], limit: Duration = .seconds(60)) async throws -> [String] {
        guard !paths.isEmpty else { return [] }
        let run = try await ToolRun.run("sha256sum", ["--"] + paths, limit: limit)
        guard run.exit.succeeded else { throw Failure(description: "sha256sum: \(run.exit): \(run.stderr)") }
        // One line a file, in argument order; a name with a backslash makes sha256sum start
        // its line with one: the digest follows it.
        let digests = run.stdout.split(separator: "\n").map { line in
            String((line.hasPrefix("\\") ? line.dropFirst() : line[...]).prefix(64))
        }
        guard digests.count == paths.count else {
            throw Failure(description: "sha256sum printed \(digests.count) lines for \(paths.count) files: \(run.stdout)")
        }
        return digests
    }

    /// The SHA-256 of one file, as `sha256sum` prints it.
    package static func sha256(_ path: String) async throws -> String {
        try await sha256([path])[0]
    }

    /// Whether the files at `first` and `second` hold the same bytes (read 1 MiB at a time; a
    /// missing file is never equal).
    package static func sameBytes(_ first: String, _ second: String) -> Bool {
        guard let one = FileHandle(forReadingAtPath: first), let other = FileHandle(forReadingAtPath: second) else { return false }
        defer {
            try? one.close()
            try? other.close()
        }
        while true {
            let left = (try? one.read(upToCount: 1 << 20)) ?? nil, right = (try? other.read(upToCount: 1 << 20)) ?? nil
            guard left == right else { return false }
            if left?.isEmpty ?? true { return true }
        }
    }

    /// Every entry under `folder` (not following symbolic links), by its path relative to
    /// `folder`: `dir/` for a folder, `name -> target` for a link, `name (size)` for anything
    /// else. Two listings taken before and after show whatever appeared, changed or went.
    package static func tree(_ folder: String) -> Set<String> {
        var entries = Set<String>()
        func walk(_ relative: String) {
            let path = relative.isEmpty ? folder : folder + "/" + relative
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                let entry = relative.isEmpty ? name : relative + "/" + name
                let full = folder + "/" + entry
                let attributes = (try? FileManager.default.attributesOfItem(atPath: full)) ?? [:]
                switch attributes[.type] as? FileAttributeType {
                case .typeDirectory?:
                    entries.insert(entry + "/")
                    walk(entry)
                case .typeSymbolicLink?:
                    entries.insert(entry + " -> " + ((try? FileManager.default.destinationOfSymbolicLink(atPath: full)) ?? "?"))
                default:
                    entries.insert(entry + " (\((attributes[.size] as? NSNumber)?.intValue ?? -1))")
                }
            }
        }
        walk("")
        return entries
    }
}
