import Foundation
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetTransfer
@testable import SkyNetWire
@testable import SkyNetWork

/// A temporary folder for returned files: `here/` (where relative targets start), `abs/` (the
/// stand-in for `/`) and `outside/` (which nothing may touch), removed on every path.
package struct ReturnSandbox: Sendable {
    package let base: String
    package let roots: ReturnRoots

    package var here: String { base + "/here" }
    package var abs: String { base + "/abs" }
    package var outside: String { base + "/outside" }

    package static func with(_ body: (ReturnSandbox) throws -> Void) throws {
        let (handle, base) = try DirectoryHandle.mkdtemp(in: NSTemporaryDirectory(), prefix: "skynet-return-")
        defer { _ = handle; try? FileManager.default.removeItem(atPath: base) }
        for name in ["here", "abs", "outside"] {
            try FileManager.default.createDirectory(atPath: base + "/" + name, withIntermediateDirectories: false)
        }
        try "keep".write(toFile: base + "/outside/keep.txt", atomically: false, encoding: .utf8)
        let roots = ReturnRoots(relative: try DirectoryHandle.open(base + "/here"), absolute: try DirectoryHandle.open(base + "/abs"))
        try body(ReturnSandbox(base: base, roots: roots))
    }

    package static func with(_ body: @Sendable (ReturnSandbox) async throws -> Void) async throws {
        let (handle, base) = try DirectoryHandle.mkdtemp(in: NSTemporaryDirectory(), prefix: "skynet-return-")
        defer { _ = handle; try? FileManager.default.removeItem(atPath: base) }
        for name in ["here", "abs", "outside"] {
            try FileManager.default.createDirectory(atPath: base + "/" + name, withIntermediateDirectories: false)
        }
        try "keep".write(toFile: base + "/outside/keep.txt", atomically: false, encoding: .utf8)
        let roots = ReturnRoots(relative: try DirectoryHandle.open(base + "/here"), absolute: try DirectoryHandle.open(base + "/abs"))
        try await body(ReturnSandbox(base: base, roots: roots))
    }

    /// Every path below the sandbox (hidden ones too), sorted.
    package func tree() -> [String] {
        (FileManager.default.enumerator(atPath: base)?.allObjects as? [String] ?? []).sorted()
    }

    /// The names in `path` that are a `.part` of ours.
    package func parts(in path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasSuffix(".part") }
    }

    package func bytes(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    /// `count` seeded random bytes.
    package static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    /// The `return`, `data`… and `end` lines a node sends for `bytes` as file `file` of request `id`.
    package static func stream(_ bytes: [UInt8], id: Int, file: Int, mode: Int = 0o644, mtime: Int64 = 1_700_000_000_000_000_000,
                       chunk: Int = maxChunkBytes) -> [Reply] {
        var replies: [Reply] = [.returnFile(ReturnHeader(id: id, file: file, header: FileHeader(size: Int64(bytes.count), mode: mode, mtimeNanoseconds: mtime)))]
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + chunk, bytes.count)
            replies.append(.chunk(FileChunk(id: id, file: file, offset: Int64(offset), bytes: Data(bytes[offset..<end]))))
            offset = end
        }
        replies.append(.fileEnd(FileEnd(id: id, file: file, sha256: SHA256.hash(bytes))))
        return replies
    }
}
