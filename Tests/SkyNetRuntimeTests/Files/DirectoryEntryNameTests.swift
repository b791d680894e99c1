import Foundation
import Testing
@testable import SkyNetRuntime

/// `directoryEntryName` reads each name `readdir` returns through its pointer, whole and
/// without its NUL, for every length a name may have.
struct DirectoryEntryNameTests {
    @Test func everyNameComesBackWholeAtEveryLength() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-dirent-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Lengths 1…255 (the longest a name may be), and a name of bytes that are not UTF-8.
        var expected: Set<[UInt8]> = [[0xFF, 0xFE, 0x41]]
        for length in 1...255 { expected.insert(Array(String(repeating: "n", count: length - 1).utf8) + [UInt8(ascii: "0") + UInt8(length % 10)]) }
        for name in expected {
            let path = Array(folder.utf8) + [UInt8(ascii: "/")] + name + [0]
            let fd = path.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600) } }
            try #require(fd >= 0)
            close(fd)
        }
        let stream = try #require(opendir(folder))
        defer { closedir(stream) }
        var seen: Set<[UInt8]> = []
        while let entry = readdir(stream) { seen.insert(directoryEntryName(entry)) }
        #expect(seen == expected.union([[UInt8(ascii: ".")], [UInt8(ascii: "."), UInt8(ascii: ".")]]))
    }
}
