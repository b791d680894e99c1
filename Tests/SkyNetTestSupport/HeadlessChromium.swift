import Foundation
import SkyNet
import SkyNetRuntime
import SkyNetTransport

/// Why the browser could not do what a test asked.
package enum HeadlessChromiumError: Error, CustomStringConvertible, Sendable {
    case notInstalled(searched: [String])
    case launchFailed(String)
    case noPage
    case navigationFailed(url: String, reason: String)
    case javaScript(expression: String, message: String)
    case waitTimedOut(expression: String, after: Duration, lastValue: String, bodyText: String)

    package var description: String {
        switch self {
        case .notInstalled(let searched):
            "headless Chromium: none of \(searched.joined(separator: ", ")) is in PATH (Debian: apt-get install chromium)"
        case .launchFailed(let reason): "headless Chromium did not start: \(reason)"
        case .noPage: "headless Chromium: no page is open (call open(_:) first)"
        case .navigationFailed(let url, let reason): "headless Chromium could not open \(url): \(reason)"
        case .javaScript(let expression, let message): "JavaScript `\(expression.prefix(200))` threw: \(message)"
        case .waitTimedOut(let expression, let after, let lastValue, let bodyText):
            "`\(expression.prefix(200))` was not true within \(after); last value: \(lastValue.prefix(300)); page text: \(bodyText)"
        }
    }
}

/// A real headless Chromium for tests, driven over the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: no port, no websocket).
///
/// `launch()` starts it in a process group of its own with a fresh profile in a temporary
/// folder; `open(_:)` loads a page, `evaluate(_:)` and `waitUntil(_:timeout:)` read its DOM,
/// `screenshot()` takes a PNG. `close()` must be called on every path (`withHeadlessChromium`
/// does): it ends the browser and all its helper processes (renderer, zygote, GPU), reaps
/// them and deletes the profile. Every call is bounded by `commandTimeout` or its own timeout.
package final class HeadlessChromium: Sendable {
    /// The names looked up in PATH, in order.
    package static let executableNames = ["chromium", "chromium-browser", "google-chrome"]

    let process: ChildProcess
    let devTools: DevToolsPipe
    /// The temporary folder holding the profile (and HOME, so nothing lands in ours).
    let profile: String
    /// How long one DevTools call may take.
    package let commandTimeout: Duration
    /// The size of a page's viewport, in CSS pixels (and screenshot pixels).
    package let viewport: (width: Int, height: Int)
    /// The page `open(_:)` attached to: its target and its flattened session.
    let page = Locked<(target: String, session: String)?>(nil)
    private let closed = Locked(false)

    /// The browser's process id (its process group's id too).
    package var pid: Int32 { process.pid }

    private init(process: ChildProcess, devTools: DevToolsPipe, profile: String, commandTimeout: Duration,
                 viewport: (width: Int, height: Int)) {
        self.process = process
        self.viewport = viewport
        self.devTools = devTools
        self.profile = profile
        self.commandTimeout = commandTimeout
    }

    /// Starts Chromium (`executable`, or the first of `executableNames` in PATH) and waits up
    /// to `timeout` until it answers on the DevTools pipe. Throws `notInstalled` when no
    /// Chromium is in PATH, `launchFailed` (with the end of its stderr) when it exits or stays
    /// silent.
    package static func launch(executable: String? = nil, timeout: Duration = .seconds(60), commandTimeout: Duration = .seconds(30),
                              viewport: (width: Int, height: Int) = (1280, 900)) async throws -> HeadlessChromium {
        let executable = try executable ?? findExecutable()
        Socket.ignoreBrokenPipes()  // a write to a browser that died must fail with EPIPE, not kill us
        let profile = try makeProfileFolder()
        let arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-dev-shm-usage", "--disable-extensions", "--disable-background-networking",
            "--disable-crash-reporter", "--disable-breakpad", "--mute-audio", "--hide-scrollbars",
            "--window-size=\(viewport.width),\(viewport.height)",
            "--user-data-dir=\(profile)", "--remote-debugging-pipe", "about:blank",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = profile
        var options = ChildProcess.Options(arguments: arguments, environment: environment)
        options.stderr = .tail(bytes: 4096)
        options.ownProcessGroup = true
        options.endGroupOnExit = true
        let process: ChildProcess
        let devTools: DevToolsPipe
        do {
            let commands = try makePipe(), replies = try makePipe()
            options.descriptors = [3: commands.read, 4: replies.write]
            defer { _ = closeDescriptor(commands.read); _ = closeDescriptor(replies.write) }  // the browser has its own copies now
            do {
                process = try ChildProcess.spawn(executable, options)
            } catch {
                for fd in [commands.write, replies.read] { _ = closeDescriptor(fd) }
                throw error
            }
            devTools = DevToolsPipe(commands: commands.write, replies: replies.read)
        } catch {
            try? FileManager.default.removeItem(atPath: profile)
            throw HeadlessChromiumError.launchFailed("\(executable): \(error)")
        }
        let browser = HeadlessChromium(process: process, devTools: devTools, profile: profile, commandTimeout: commandTimeout,
                                       viewport: viewport)
        do {
            _ = try await devTools.call("Browser.getVersion", timeout: timeout)
        } catch {
            await browser.close()
            let stderr = await process.capturedOutput?.stderr.map { String(decoding: $0.bytes, as: UTF8.self) } ?? ""
            throw HeadlessChromiumError.launchFailed("\(error); exit: \(process.exit.current.map(\.description) ?? "?"); stderr ends: \(stderr.suffix(1000))")
        }
        return browser
    }

    /// Ends the browser: asks it to close (Browser.close), kills its whole process group if it
    /// has not exited 10 s later, reaps it, closes the pipe and deletes the profile. Safe to
    /// call twice.
    package func close() async {
        guard closed.withLock({ already in defer { already = true }; return !already }) else { return }
        if process.exit.current == nil {
            _ = try? await devTools.call("Browser.close", timeout: .seconds(5))
            let exit = process.exit
            if (try? await withTimeout(.seconds(10)) { await exit.value }) == nil {
                await process.stop(grace: .seconds(2))
            }
        }
        // endGroupOnExit killed what was left of the group when the browser was reaped.
        _ = await process.exit.value
        devTools.fail("the browser was closed")
        await devTools.closeWriter()
        let readerEnded = devTools.readerEnded
        _ = try? await withTimeout(.seconds(10)) { await readerEnded.value }
        let profile = self.profile
        _ = try? await onOwnThread(named: "skynet-chromium-cleanup") { try FileManager.default.removeItem(atPath: profile) }
    }

    /// The first of `executableNames` found in `path` (PATH by default).
    package static func findExecutable(searching path: String? = nil) throws -> String {
        let path = path ?? ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for name in executableNames {
            for folder in path.split(separator: ":") where !folder.isEmpty {
                let candidate = "\(folder)/\(name)"
                if access(candidate, X_OK) == 0 { return candidate }
            }
        }
        throw HeadlessChromiumError.notInstalled(searched: executableNames)
    }

    /// A new folder of our own under the temporary directory.
    private static func makeProfileFolder() throws -> String {
        var template = Array((NSTemporaryDirectory() + "/skynet-chromium-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ $0.baseAddress.flatMap { mkdtemp($0) } }) else {
            throw HeadlessChromiumError.launchFailed("cannot make a profile folder: \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }

    /// A pipe whose ends are close-on-exec, so no other child inherits them. (pipe2 is hidden
    /// by Swift's Glibc module; a child spawned by `ChildProcess` in between closes every
    /// descriptor above 2 anyway.)
    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw HeadlessChromiumError.launchFailed("pipe: \(String(cString: strerror(errno)))") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }
}

/// Launches a browser, runs `body` with it, and closes it on every path.
package func withHeadlessChromium<T: Sendable>(
    launchTimeout: Duration = .seconds(60), _ body: (HeadlessChromium) async throws -> T
) async throws -> T {
    let browser = try await HeadlessChromium.launch(timeout: launchTimeout)
    do {
        let result = try await body(browser)
        await browser.close()
        return result
    } catch {
        await browser.close()
        throw error
    }
}

/// `close(2)`, for methods of a type that has a `close()` of its own.
private func closeDescriptor(_ fd: Int32) -> Int32 {
    close(fd)
}
