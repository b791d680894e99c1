import Foundation
import SkyNet
import SkyNetHTTP
import SkyNetTestSupport
import Testing

/// The headless-Chromium driver against a real Chromium: a page served by our own HTTPServer
/// on 127.0.0.1, a script that fills it, the DOM read back, a screenshot that shows something,
/// and no browser process left behind. Serialized and generous: Chromium is heavy on 2 cores.
@Suite(.serialized, .timeLimit(.minutes(5))) struct HeadlessChromiumTests {
    /// A page whose script counts up on a timer and fills `#status` once it reaches 20.
    static let page = """
        <!doctype html>
        <html><head><meta charset="utf-8"><title>SkyNet smoke</title>
        <style>
          body { font: 24px sans-serif; margin: 40px; background: #fafafa; color: #123; }
          #bar { height: 40px; width: 0; background: #2a7; }
        </style></head>
        <body><h1>Headless smoke page</h1><p id="status">waiting</p><div id="bar"></div>
        <p>count: <span id="count">0</span></p>
        <script>
          let count = 0;
          const timer = setInterval(() => {
            count += 1;
            document.getElementById('count').textContent = String(count);
            document.getElementById('bar').style.width = (count * 30) + 'px';
            if (count >= 20) {
              document.getElementById('status').textContent = 'filled by the script';
              clearInterval(timer);
            }
          }, 50);
        </script></body></html>
        """

    @Test func aPageFilledByItsScriptIsReadAndPhotographed() async throws {
        let server = try await HTTPServer.start(routes: ["/": .fixed(contentType: "text/html; charset=utf-8", Array(Self.page.utf8))])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-chromium-test-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let browser = try await HeadlessChromium.launch()
        do {
            try await browser.open("http://127.0.0.1:\(server.port)/")
            try await browser.waitUntil("Number(document.getElementById('count').textContent) >= 20", timeout: .seconds(60))
            #expect(try await browser.evaluate("document.getElementById('status').textContent") == "filled by the script")
            #expect(try await browser.bodyText().contains("count: 20"))
            let png = try await browser.screenshot()
            let file = folder.appendingPathComponent("page.png")
            try Data(png).write(to: file)
            let image = try PNGImage(bytes: Array(try Data(contentsOf: file)))
            #expect(image.width == 1280)
            #expect(image.height == 900)
            #expect(!image.isBlank)
            // Background, text and the green bar at least.
            #expect(image.distinctColours() >= 3)
            // The check after close() sees the browser and its helpers while they run.
            #expect(browser.remainingProcesses().count >= 2)
        } catch {
            await browser.close()
            await server.stop()
            throw error
        }
        await browser.close()
        await server.stop()
        #expect(await browser.processesLeft(within: .seconds(10)) == [])
    }

    @Test func aJavaScriptExceptionAndAWaitThatTimesOutAreErrors() async throws {
        try await withHeadlessChromium { browser in
            await #expect(throws: HeadlessChromiumError.self) { try await browser.evaluate("1 + 1") }  // no page yet
            try await browser.open("data:text/html,<p>nothing happens here</p>")
            #expect(try await browser.evaluate("1 + 1") == .number(2))
            do {
                _ = try await browser.evaluate("(() => { throw new Error('boom from the page') })()")
                Issue.record("the exception did not surface")
            } catch HeadlessChromiumError.javaScript(_, let message) {
                #expect(message.contains("boom from the page"))
            }
            await #expect(throws: HeadlessChromiumError.self) { try await browser.evaluate("notDefinedAnywhere.field") }
            do {
                try await browser.waitUntil("document.title === 'never'", timeout: .seconds(1))
                Issue.record("the wait did not time out")
            } catch let error as HeadlessChromiumError {
                // Says what it saw: the last value and the page's text.
                #expect(error.description.contains("last value: false"))
                #expect(error.description.contains("nothing happens here"))
            }
        }
    }

    @Test func aBrowserThatExitsAtOnceIsALaunchFailureNotAHang() async throws {
        let clock = ContinuousClock(), start = clock.now
        do {
            _ = try await HeadlessChromium.launch(executable: "/bin/true", timeout: .seconds(60))
            Issue.record("launching /bin/true succeeded")
        } catch HeadlessChromiumError.launchFailed(let reason) {
            // Whichever comes first: the write of the first command or the end of the replies.
            #expect(reason.contains("Broken pipe") || reason.contains("closed the DevTools pipe"))
            #expect(reason.contains("exit status 0"))
        }
        // The closed pipe ends the wait, not the 60 s launch timeout.
        #expect(clock.now - start < .seconds(30))
    }

    @Test func noChromiumInPathIsAClearError() {
        #expect(throws: HeadlessChromiumError.self) { try HeadlessChromium.findExecutable(searching: "/nonexistent-folder") }
        do {
            _ = try HeadlessChromium.findExecutable(searching: "/nonexistent-folder")
        } catch {
            #expect("\(error)".contains("apt-get install chromium"))
        }
    }
}
