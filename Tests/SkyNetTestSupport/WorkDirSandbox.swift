import Foundation
import Testing
@testable import SkyNetRuntime

/// A private temporary directory for the node's file tests, removed (links as names, never
/// followed) on every path by `WorkDirSandbox.with`. Inside it the tests build what a node
/// would see and an "outside" the node must never touch.
package struct WorkDirSandbox {
    package let path: String

    /// Runs `body` with a fresh sandbox, then removes it whatever `body` did.
    package static func with<T>(_ body: (WorkDirSandbox) async throws -> T) async throws -> T {
        let parent = String(NSTemporaryDirectory().reversed().drop { $0 == "/" }.reversed())
        var template = Array("\(parent.isEmpty ? "/tmp" : parent)/skynet-files-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        try #require(made != nil, "mkdtemp: \(String(cString: strerror(errno)))")
        let sandbox = WorkDirSandbox(path: String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
        defer { try? FileManager.default.removeItem(atPath: sandbox.path) }
        return try await body(sandbox)
    }

    package func at(_ relative: String) -> String { path + "/" + relative }

    /// Makes the directory `relative` (and those above it).
    @discardableResult
    package func makeDirectory(_ relative: String) throws -> String {
        try FileManager.default.createDirectory(atPath: at(relative), withIntermediateDirectories: true)
        return at(relative)
    }

    /// Writes `bytes` to `relative`, its directories made first.
    @discardableResult
    package func write(_ relative: String, _ bytes: [UInt8], mode: Int = 0o644) throws -> String {
        let full = at(relative)
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: full))
        #expect(chmod(full, mode_t(mode)) == 0)
        return full
    }

    /// Makes `relative` a symbolic link to `target`.
    package func symlink(_ relative: String, to target: String) throws {
        try FileManager.default.createDirectory(atPath: (at(relative) as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try #require(Glibc.symlink(target, at(relative)) == 0, "symlink: \(String(cString: strerror(errno)))")
    }

    /// Every path under `relative` (itself excluded), with its kind and size, never following
    /// a link: a tree listed before and after must be equal when nothing was written there.
    package func tree(_ relative: String = "") -> [String: String] {
        var listing: [String: String] = [:]
        func walk(_ sub: String) {
            let full = sub.isEmpty ? at(relative) : at(relative) + "/" + sub
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: full) else { return }
            for name in names {
                let child = sub.isEmpty ? name : sub + "/" + name
                var stats = stat()
                guard lstat(full + "/" + name, &stats) == 0 else { continue }
                switch stats.st_mode & S_IFMT {
                case S_IFDIR:
                    listing[child] = "dir"
                    walk(child)
                case S_IFLNK: listing[child] = "link"
                default: listing[child] = "file \(stats.st_size)"
                }
            }
        }
        walk("")
        return listing
    }

    /// The bytes of `relative`, or nil when it cannot be read.
    package func read(_ relative: String) -> [UInt8]? {
        (try? Data(contentsOf: URL(fileURLWithPath: at(relative)))).map(Array.init)
    }

    /// Whether `relative` exists (a dangling link counts).
    package func exists(_ relative: String) -> Bool {
        var stats = stat()
        return lstat(at(relative), &stats) == 0
    }

    /// `lstat` of `relative`.
    package func status(_ relative: String) -> stat? {
        var stats = stat()
        return lstat(at(relative), &stats) == 0 ? stats : nil
    }
}
