import Foundation
import SkyNet
import SkyNetWire

/// The page: open a URL, evaluate JavaScript in it, wait for a condition, take a screenshot.
extension HeadlessChromium {
    /// Opens `url` in a new tab (closing the one opened before) and returns once its document
    /// has loaded (`readyState` is `complete`), within `timeout`. A network error is
    /// `navigationFailed`.
    package func open(_ url: String, timeout: Duration = .seconds(60)) async throws {
        let target = try await devTools.call("Target.createTarget", ["url": "about:blank"], timeout: commandTimeout)
        guard let targetID = target["targetId"]?.string else { throw DevToolsError("Target.createTarget: no targetId in \(target)") }
        let attached = try await devTools.call(
            "Target.attachToTarget", ["targetId": .string(targetID), "flatten": true], timeout: commandTimeout)
        guard let session = attached["sessionId"]?.string else { throw DevToolsError("Target.attachToTarget: no sessionId in \(attached)") }
        let previous = page.withLock { page in
            defer { page = (targetID, session) }
            return page?.target
        }
        if let previous {
            _ = try? await devTools.call("Target.closeTarget", ["targetId": .string(previous)], timeout: commandTimeout)
        }
        // Headless Chromium keeps room for a window frame: without this the viewport is
        // shorter than --window-size (813 rather than 900 px here).
        _ = try await devTools.call(
            "Emulation.setDeviceMetricsOverride",
            ["width": .number(Double(viewport.width)), "height": .number(Double(viewport.height)), "deviceScaleFactor": 1,
             "mobile": false],
            session: session, timeout: commandTimeout)
        // Navigating the attached tab (rather than creating it with the URL) means every later
        // evaluate runs in the new document, never in the blank one before it.
        let navigation = try await devTools.call("Page.navigate", ["url": .string(url)], session: session, timeout: timeout)
        if let reason = navigation["errorText"]?.string, !reason.isEmpty {
            throw HeadlessChromiumError.navigationFailed(url: url, reason: reason)
        }
        try await waitUntil("document.readyState === 'complete'", timeout: timeout)
    }

    /// Evaluates `expression` in the page and returns its value (JSON-serialisable values;
    /// `undefined` is `.null`; a promise is awaited). A thrown exception is `.javaScript`.
    package func evaluate(_ expression: String) async throws -> JSONValue {
        try await evaluate(expression, timeout: commandTimeout)
    }

    private func evaluate(_ expression: String, timeout: Duration) async throws -> JSONValue {
        let reply = try await devTools.call(
            "Runtime.evaluate", ["expression": .string(expression), "returnByValue": true, "awaitPromise": true],
            session: try session(), timeout: timeout)
        if let details = reply["exceptionDetails"] {
            let message = details["exception"]?["description"]?.string ?? details["text"]?.string ?? details.description
            throw HeadlessChromiumError.javaScript(expression: expression, message: message)
        }
        return reply["result"]?["value"] ?? .null
    }

    /// Polls `expression` every `interval` until it is `true`. After `timeout` throws
    /// `waitTimedOut` with the last value seen and the start of the page's text. An expression
    /// that throws counts as not true yet (the page may still be building what it reads).
    package func waitUntil(_ expression: String, timeout: Duration, interval: Duration = .milliseconds(100)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var lastValue = "(none yet)"
        while true {
            do {
                // A question gets what is left of the wait, but at least 5 s: a browser on a
                // loaded machine (the thread sanitizer beside other suites) took over 0.6 s to
                // answer `1 + 1`, and a question cut short is an error, not the wait's verdict.
                let value = try await evaluate(expression, timeout: max(deadline - clock.now, .seconds(5)))
                if value == .bool(true) { return }
                lastValue = value.description
            } catch let error as HeadlessChromiumError {
                guard case .javaScript(_, let message) = error else { throw error }
                lastValue = "threw \(message)"
            }
            guard clock.now + interval < deadline else { break }
            // Polling: the page's state is what is awaited; this only paces the questions.
            try await Task.sleep(for: interval)
        }
        let text = try? await evaluate("document.body ? document.body.innerText.slice(0, 500) : '(no body)'", timeout: .seconds(5)).string
        throw HeadlessChromiumError.waitTimedOut(expression: expression, after: timeout, lastValue: lastValue, bodyText: text ?? "?")
    }

    /// The page's text (`document.body.innerText`).
    package func bodyText() async throws -> String {
        try await evaluate("document.body ? document.body.innerText : ''").string ?? ""
    }

    /// A PNG of the page's viewport (`viewport`, 1280×900 by default).
    package func screenshot() async throws -> [UInt8] {
        let reply = try await devTools.call("Page.captureScreenshot", ["format": "png"], session: try session(), timeout: commandTimeout)
        guard let base64 = reply["data"]?.string, let data = Data(base64Encoded: base64) else {
            throw DevToolsError("Page.captureScreenshot: no base64 data in the reply")
        }
        return [UInt8](data)
    }

    private func session() throws -> String {
        guard let session = page.withLock({ $0?.session }) else { throw HeadlessChromiumError.noPage }
        return session
    }
}
