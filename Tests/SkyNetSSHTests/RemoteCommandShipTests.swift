import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetSSH
import Testing

/// `--ship`'s remote commands, run by a real `/bin/sh` with a HOME of the test's own.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct RemoteCommandShipTests {
    struct Run {
        let exit: ChildExit
        let stdout: String
        let stderr: String
    }

    func run(_ command: String, home: String, stdin: String? = nil, arguments: [String] = [], path: String = "/usr/bin:/bin") async throws -> Run {
        var options = ChildProcess.Options(arguments: ["-c", command] + arguments, environment: ["HOME": home, "PATH": path])
        options.stdout = .bytes(limit: 1 << 20)
        options.stderr = .bytes(limit: 1 << 20)
        if let stdin { options.stdin = .file(stdin) }
        let child = try ChildProcess.spawn("/bin/sh", options)
        let exit = try await withTimeout(.seconds(10)) { await child.exit.value }
        let output = await child.capturedOutput
        return Run(exit: exit, stdout: String(decoding: output?.stdout?.bytes ?? [], as: UTF8.self),
                   stderr: String(decoding: output?.stderr?.bytes ?? [], as: UTF8.self))
    }

    func withHome<T>(_ body: (String) async throws -> T) async throws -> T {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-ship-home-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        return try await body(home)
    }

    /// A small "build" to ship: a script that prints its arguments.
    func build(in home: String) throws -> SSHShipment {
        let path = home + "/build"
        try "#!/bin/sh\nprintf '%s\\n' \"$@\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        return try SSHShipment.of(path)
    }

    @Test func theShippedCommandRunsOnlyTheCopyOfThisBuildOnThisPlatform() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            let command = try RemoteCommand.shipped(shipment, arguments: ["--job", "a='b' \"c\""])
            #expect(!command.dropFirst("exec /bin/sh -c '".count).dropLast().contains { "'\\\n".contains($0) })
            // No copy yet: 121, the upload follows.
            #expect(try await run(command, home: home).exit.reason == .exited(121))
            // Another platform: 120 and the reason.
            let foreign = SSHShipment(path: shipment.path, size: shipment.size, sha256: shipment.sha256, platform: "Plan9 vax")
            let refused = try await run(try RemoteCommand.shipped(foreign, arguments: []), home: home)
            #expect(refused.exit.reason == .exited(120))
            #expect(refused.stderr == "skynet --ship: this host is \(LocalPlatform.name), not Plan9 vax\n")
            // Uploaded: the copy runs with the node's arguments.
            let upload = try await run(RemoteCommand.upload(shipment), home: home, stdin: shipment.path)
            #expect(upload.exit.succeeded, "\(upload.stderr)")
            let copy = "\(home)/.cache/skynet/skynet-\(shipment.sha256)"
            #expect(try SSHShipment.of(copy).sha256 == shipment.sha256)
            #expect(try FileManager.default.attributesOfItem(atPath: copy)[.posixPermissions] as? Int == 0o700)
            #expect(try FileManager.default.contentsOfDirectory(atPath: "\(home)/.cache/skynet") == ["skynet-\(shipment.sha256)"])
            let ran = try await run(command, home: home)
            #expect(ran.exit.succeeded)
            let words = ran.stdout.split(separator: "\n").map(String.init)
            #expect(words.prefix(3) == ["node", "--stdio", "--stdio-args"])
            #expect(words.count == 4 && Secrets.bytes(fromHex: words[3]) == Array("--job\0a='b' \"c\"".utf8))
        }
    }

    @Test func anUploadWithTheWrongBytesLeavesNoFile() async throws {
        try await withHome { home in
            let shipment = try build(in: home)
            let other = home + "/other"
            try "not the build".write(toFile: other, atomically: true, encoding: .utf8)
            let upload = try await run(RemoteCommand.upload(shipment), home: home, stdin: other)
            #expect(upload.exit.reason == .exited(122))
            let actual = try SSHShipment.of(other).sha256
            #expect(upload.stderr == "skynet --ship: the copy has SHA-256 \(actual), not \(shipment.sha256)\n")
            #expect(try FileManager.default.contentsOfDirectory(atPath: "\(home)/.cache/skynet") == [])
        }
    }

    @Test func theShipmentIsTheFilesSHA256() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-ship-\(UUID().uuidString)").path
        try "abc".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let shipment = try SSHShipment.of(path, platform: "Linux x86_64")
        #expect(shipment.sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(shipment.size == 3)
        #expect(throws: SSHShipment.Unavailable.self) { try SSHShipment.of(path, platform: "Linux x86_64; rm") }
    }
}
