import Foundation
import Testing
@testable import SkyNetRuntime

extension ProcessTests {
    /// The library as a program outside this package sees it: `import SkyNet` and the modules
    /// `swift build` made, compiled without this package's name, so only `public` declarations
    /// are visible (`package` ones are for the package's own targets).
    @Suite(.timeLimit(.minutes(5)))
    struct PublicAPITests {
        static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        static let modules = skynetBinary.deletingLastPathComponent().appendingPathComponent("Modules").path

        /// The C module of the system calls Swift's C library leaves out, which a program that
        /// depends on the package gets from SwiftPM with the rest.
        static let platformHeaders = repository.appendingPathComponent("Sources/CSkyNetPlatform/include").path

        /// Type-checks `files` as a program of its own, against the built modules.
        func typecheck(_ files: [String]) async throws -> Finished {
            try await runProgram("/usr/bin/env", ["swiftc", "-typecheck", "-swift-version", "6", "-I", Self.modules,
                                                  "-I", Self.platformHeaders] + files,
                                 limit: .seconds(240))
        }

        @Test(arguments: ["WordCount", "Actors"])
        func theExampleCompilesAgainstThePublicAPIAlone(example: String) async throws {
            let main = Self.repository.appendingPathComponent("Examples/\(example)/main.swift").path
            let run = try await typecheck([main])
            #expect(run.status == 0, "\(run.stderr)")
        }

        @Test func aPackageDeclarationIsNotPartOfIt() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-api-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let program = folder.appendingPathComponent("main.swift")
            // The real clock and the peer links' internals are the package's, not the library's.
            try """
            import SkyNet
            _ = DeadlineTimer.shared
            _ = PeerLinks.Settings().returnRoots
            """.write(to: program, atomically: true, encoding: .utf8)
            let run = try await typecheck([program.path])
            #expect(run.status != 0)
            #expect(run.stderr.contains("cannot find 'DeadlineTimer' in scope"), "\(run.stderr)")
            #expect(run.stderr.contains("'returnRoots' is inaccessible due to 'package' protection level"), "\(run.stderr)")
        }
    }
}
