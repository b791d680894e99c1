import Foundation
import SkyNet
import SkyNetRuntime

extension Workloads {
    /// W12: what a dashboard open in a browser costs the scan. W2's shape (no-op tasks, 3 nodes
    /// × 4, dispatch-only) made long enough to watch: 600,000 tasks, the rate measured from the
    /// `--json` completion times after the first 4 s (by then the browser has started, which
    /// alone costs about a core for a second or two, and the page shows every frame). Three
    /// variants: no dashboard, `--dashboard 0` with nobody watching, and `--dashboard 0` open
    /// in headless Chromium (started on the `Dashboard:` line), in turn, the order turning each
    /// run. Target: open in Chromium at most 5 % slower than no dashboard.
    func dashboardCost() throws -> [Row] {
        guard let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw BenchError("W12 needs chromium (apt-get install chromium)")
        }
        let cluster = try BenchCluster(skynet: skynet, count: 3)
        defer { cluster.stop() }
        enum Variant { case none, served, watched }

        func throughput(_ variant: Variant) throws -> Double {
            let total = 600_000, skip = 4.0
            var arguments = ["scan", "--json", "--cluster", cluster.file, "--total", String(total), "--duration", "0",
                             "--local-capacity", "0", "--failing-every", "0", "--quiet"]
            if variant != .none { arguments += ["--dashboard", "0"] }
            let outPath = NSTemporaryDirectory() + "skynet-bench-w12-\(UUID().uuidString).out"
            defer { unlink(outPath) }
            var options = ChildProcess.Options(arguments: arguments)
            options.stdout = .file(outPath, append: false)
            options.stderr = .lines()
            let scan = try ChildProcess.spawn(skynet.path, options)
            Children.track(scan.pid)
            defer { Children.untrack(scan.pid) }
            var browser: ChildProcess?
            if variant == .watched {
                let line = try blocking { await scan.stderrLines?.first { $0.hasPrefix("Dashboard: ") } }
                guard let url = line?.dropFirst("Dashboard: ".count) else { throw BenchError("no Dashboard: line") }
                browser = try openInBrowser(chromium, String(url))
            }
            let ended = try blocking { await scan.exit.value }
            if let browser {
                _ = try blocking { await browser.stop(grace: .seconds(2)) }
            }
            guard ended.status == 0 else { throw BenchError("W12 scan exited \(ended.status)") }
            let times = try String(contentsOfFile: outPath, encoding: .utf8).split(separator: "\n").compactMap { line -> Double? in
                guard line.hasPrefix(#"{"event":"completed""#),
                      let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
                return object["time"] as? Double
            }
            let measured = times.filter { $0 >= skip }
            guard times.count == total, measured.count > 1000, let last = measured.max() else {
                throw BenchError("W12: \(times.count)/\(total) completed, \(measured.count) after \(skip) s: make the scan longer")
            }
            return Double(measured.count) / (last - skip)
        }

        _ = try throughput(.none)  // warm-up
        var rates: [Variant: [Double]] = [:]
        // The order turns each run, so that what a run leaves behind (a browser exiting, the
        // nodes' sockets closing) falls on each variant alike.
        let orders: [[Variant]] = [[.none, .served, .watched], [.served, .watched, .none], [.watched, .none, .served]]
        for run in 0..<runs {
            for variant in orders[run % orders.count] {
                rates[variant, default: []].append(try throughput(variant))
            }
        }
        let none = rates[.none] ?? [], served = rates[.served] ?? [], watched = rates[.watched] ?? []
        let floor = 0.95 * median(none)
        var open = Row(workload: "W12", measure: "W2 rate, dashboard open in Chromium", unit: "tasks/s", values: watched,
                       ideal: String(format: "%.0f (no dashboard)", median(none)), target: String(format: ">= %.0f (-5%%)", floor),
                       met: median(watched) >= floor)
        open.note = String(format: "open %.1f%% of no dashboard; served, nobody watching %.1f%%",
                           100 * median(watched) / median(none), 100 * median(served) / median(none))
        return [
            open,
            Row(workload: "W12", measure: "W2 rate, dashboard served, not open", unit: "tasks/s", values: served),
            Row(workload: "W12", measure: "W2 rate, no dashboard", unit: "tasks/s", values: none),
        ]
    }

    /// Headless Chromium showing `url`, in a process group of its own (its renderer and
    /// helpers end with it), with a profile in a temporary folder.
    private func openInBrowser(_ chromium: String, _ url: String) throws -> ChildProcess {
        let profile = NSTemporaryDirectory() + "skynet-bench-chromium-\(UUID().uuidString)"
        var options = ChildProcess.Options(arguments: [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
            "--window-size=1280,900", "--user-data-dir=\(profile)", url,
        ])
        options.ownProcessGroup = true
        options.endGroupOnExit = true
        let browser = try ChildProcess.spawn(chromium, options)
        Children.track(browser.pid)
        Task {
            _ = await browser.exit.value
            Children.untrack(browser.pid)
            try? FileManager.default.removeItem(atPath: profile)
        }
        return browser
    }
}
