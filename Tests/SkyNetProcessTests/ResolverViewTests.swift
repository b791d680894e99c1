import Foundation
import SkyNetLocalHosts
import SkyNetTestSupport
import Testing

/// The test's own /etc/hosts, seen only through its launcher, changed in place.
@Suite(.serialized, .enabled(if: ResolverView.isAvailable, "needs root and unshare (apt-get install util-linux)"), .timeLimit(.minutes(1)))
struct ResolverViewTests {
    func lookUp(_ name: String, in view: ResolverView) async throws -> [String] {
        let words = view.launcher + ["getent", "ahostsv4", name]
        let run = try await ToolRun.run(words[0], Array(words.dropFirst()), limit: .seconds(10))
        // getent prints each address three times (one per socket type).
        return Array(Set(run.stdout.split(whereSeparator: \.isNewline).compactMap { $0.split(separator: " ").first.map(String.init) })).sorted()
    }

    @Test func aNameResolvesToWhatWasSetAndToTheChangeAfterwards() async throws {
        let view = try ResolverView()
        defer { view.remove() }
        try view.set(["10.213.1.2", "10.213.2.2"], for: "skynet-nodes.test")
        #expect(try await lookUp("skynet-nodes.test", in: view) == ["10.213.1.2", "10.213.2.2"])
        try view.set(["10.213.1.2", "10.213.2.2", "10.213.3.2"], for: "skynet-nodes.test")
        #expect(try await lookUp("skynet-nodes.test", in: view) == ["10.213.1.2", "10.213.2.2", "10.213.3.2"])
        try view.set(["10.213.3.2"], for: "skynet-nodes.test")
        #expect(try await lookUp("skynet-nodes.test", in: view) == ["10.213.3.2"])
        #expect(try FileManager.default.attributesOfItem(atPath: view.hostsPath)[.size] as? Int == 4096)
        // Outside the launcher, the name is unknown.
        let outside = try await ToolRun.run("getent", ["ahostsv4", "skynet-nodes.test"], limit: .seconds(10))
        #expect(outside.stdout.isEmpty)
    }
}
