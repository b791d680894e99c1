import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetDashboard
@testable import SkyNetRuntime

extension ProcessTests {
    /// The dashboard in a real browser: headless Chromium (Debian's `chromium`) opens the page
    /// of a running `skynet scan --spawn 3 --dashboard 0`, and the DOM is read as a user would
    /// see it. Set SKYNET_DASHBOARD_SCREENSHOT=PATH to also keep the mid-scan screenshot there
    /// (how docs/dashboard.png is made).
    @Suite(.serialized, .timeLimit(.minutes(5)))
    struct DashboardBrowserTests {
        static let systems = ["local", "node1", "node2", "node3"]

        /// True once every system has its row in the systems table.
        static let everySystemShown = "[\(systems.map { "'\($0)'" }.joined(separator: ","))]"
            + ".every(name => [...document.querySelectorAll('#systems tbody tr')].some(row => row.querySelector('.name').textContent === name))"

        @Test func thePageFollowsAScanOverSpawnedNodesToTheEnd() async throws {
            try await withHeadlessChromium { browser in
                // 1,200 tasks of 0.1 s on 16 slots: about 7.5 s, long enough to be watched.
                let scan = try RunningProcess(["scan", "--total", "1200", "--duration", "0.1", "--spawn", "3", "--failing-every", "40",
                                               "--quiet", "--dashboard", "0", "--dashboard-linger", "60"])
                defer { scan.kill() }
                let url = try await Self.dashboardURL(of: scan)
                try await browser.open(url)
                try await browser.waitUntil(Self.everySystemShown, timeout: .seconds(60))
                // Opened while the scan runs (the test fails if the scan beat the browser).
                let early = try await browser.evaluate("[document.getElementById('scan-state').textContent, +document.getElementById('completed').textContent]")
                #expect(early.array?.first?.string == "running", "\(early)")
                #expect((early.array?.last?.int ?? 1200) < 1200, "\(early)")
                // Wait for a third of the bars in the task stream, then photograph the page mid-scan.
                try await browser.waitUntil("+document.getElementById('completed').textContent >= 400", timeout: .seconds(60))
                let image = try await browser.screenshot()
                try Self.keep(image, named: "dashboard-mid-scan.png")
                let png = try PNGImage(bytes: image)
                #expect(png.width == 1280 && !png.isBlank)
                #expect(png.distinctColours(max: 50) >= 10, "a page with a table, bars and text has many colours")

                try await browser.waitUntil(
                    "document.getElementById('completed').textContent === '1200' && document.getElementById('total').textContent === '1200'",
                    timeout: .seconds(120))
                try await browser.waitUntil("document.getElementById('scan-state').textContent === 'completed'", timeout: .seconds(30))
                let final = try await browser.evaluate("document.getElementById('final').textContent")
                #expect(final.string?.hasPrefix("Done: all 1200 tasks completed in ") == true, "\(final)")
                let rows = try await browser.evaluate(
                    "[...document.querySelectorAll('#systems tbody tr')].map(row => row.querySelector('.name').textContent + ' ' + row.querySelector('.completed').textContent)")
                let completedBySystem = (rows.array ?? []).compactMap(\.string)
                #expect(completedBySystem.map { $0.split(separator: " ").first.map(String.init) ?? "" } == Self.systems)
                #expect(completedBySystem.compactMap { Int($0.split(separator: " ").last ?? "") }.reduce(0, +) == 1200)
                try Self.keep(try await browser.screenshot(), named: "dashboard-final.png")

                scan.send(SIGINT)  // ends the linger
                let run = try await scan.finish(timeout: .seconds(30))
                #expect(run.status == 0)
            }
        }

        @Test func withATokenThePageAsksForItAndLogsInWithoutSendingIt() async throws {
            let token = "dashboard-browser-token-\(UUID().uuidString)"
            try await withHeadlessChromium { browser in
                let scan = try RunningProcess(["scan", "--total", "600", "--duration", "0.05", "--spawn", "3", "--failing-every", "0",
                                               "--quiet", "--dashboard", "0", "--dashboard-linger", "60"],
                                              environment: ["SKYNET_TOKEN": token])
                defer { scan.kill() }
                let url = try await Self.dashboardURL(of: scan)
                try await browser.open(url)
                try await browser.waitUntil("!document.getElementById('login').hidden", timeout: .seconds(30))
                // A wrong token is refused on the page.
                try await Self.logIn(browser, with: "not the token at all")
                #expect(try await browser.evaluate("document.getElementById('login-message').textContent").string == "wrong token")
                // The right one opens the scan, once the second that a wrong proof costs is over
                // (until then the server answers 429 and the page says to try again).
                for _ in 0..<40 where try await browser.evaluate("document.getElementById('login').hidden").bool != true {
                    try await Self.logIn(browser, with: token)
                    // Paces the retries against the server's one-second pause, not an ordering wait.
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(try await browser.evaluate("document.getElementById('login').hidden").bool == true)
                try await browser.waitUntil(Self.everySystemShown, timeout: .seconds(60))
                try await browser.waitUntil("document.getElementById('completed').textContent === '600'", timeout: .seconds(120))
                // The session cookie is not readable by scripts, and nothing keeps the token.
                let kept = try await browser.evaluate("document.cookie + '|' + localStorage.length + '|' + sessionStorage.length + '|' + document.getElementById('token').value")
                #expect(kept.string == "|0|0|", "\(kept)")
                scan.send(SIGINT)
                let run = try await scan.finish(timeout: .seconds(30))
                #expect(run.status == 0)
                #expect(!(run.stdout + run.stderr).contains(token))
            }
        }

        /// Types `token` into the page's login form and submits it; returns once the page has
        /// the answer (the form is gone, or it says why not).
        static func logIn(_ browser: HeadlessChromium, with token: String) async throws {
            _ = try await browser.evaluate("""
                document.getElementById('login-message').textContent = '';
                document.getElementById('token').value = '\(token)';
                document.getElementById('login-form').requestSubmit();
                true
                """)
            try await browser.waitUntil(
                "document.getElementById('login').hidden || document.getElementById('login-message').textContent !== ''", timeout: .seconds(30))
        }

        /// The page's address, from the scan's `Dashboard: …` line.
        static func dashboardURL(of scan: RunningProcess) async throws -> String {
            let line = try await scan.waitForErrorLine(timeout: .seconds(60)) { $0.hasPrefix("Dashboard: http://") }
            let url = String(line.dropFirst("Dashboard: ".count))
            #expect(url.wholeMatch(of: /http:\/\/127\.0\.0\.1:\d+\//) != nil, "\(url)")
            return url
        }

        /// Writes a screenshot under the test's temporary folder (and to
        /// SKYNET_DASHBOARD_SCREENSHOT when that is set, for the mid-scan one).
        static func keep(_ png: [UInt8], named name: String) throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-dashboard-\(ProcessInfo.processInfo.processIdentifier)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(png).write(to: folder.appendingPathComponent(name))
            if name == "dashboard-mid-scan.png", let path = ProcessInfo.processInfo.environment["SKYNET_DASHBOARD_SCREENSHOT"] {
                try Data(png).write(to: URL(fileURLWithPath: path))
            }
        }
    }
}
