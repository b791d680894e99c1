import Foundation
import SkyNet
import SkyNetRuntime
import SkyNetTransport

/// A real Prometheus server (Debian's `prometheus` package) that scrapes given targets on
/// 127.0.0.1 every second, in a scratch folder of its own: for the test that checks what a
/// scrape of `/metrics` stores, through Prometheus's own query API.
package final class PrometheusServer: Sendable {
    package static let binary = "/usr/bin/prometheus"
    package static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: binary) }

    /// Where its web server and API listen, on 127.0.0.1.
    package let port: Int
    private let child: ChildProcess
    private let folder: String

    /// Its log (stderr), for a failure's message.
    package var log: [String] { child.stderrLines?.lines ?? [] }

    private init(port: Int, child: ChildProcess, folder: String) {
        self.port = port
        self.child = child
        self.folder = folder
    }

    /// Starts Prometheus scraping `targets` (job name → port on 127.0.0.1) every second and
    /// returns once it says it is ready and `/-/ready` answers 200. It listens on a port the
    /// kernel picks (`127.0.0.1:0`), read back from its log line `msg="Listening on"
    /// address=127.0.0.1:N` (2.42 logs the bound address there).
    package static func start(targets: [String: Int]) async throws -> PrometheusServer {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-prometheus-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var config = "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
        for (job, port) in targets.sorted(by: { $0.key < $1.key }) {
            config += "  - job_name: \(job)\n    static_configs:\n      - targets: [\"127.0.0.1:\(port)\"]\n"
        }
        do {
            try config.write(toFile: folder + "/prometheus.yml", atomically: true, encoding: .utf8)
            var options = ChildProcess.Options(arguments: [
                "--config.file=\(folder)/prometheus.yml", "--storage.tsdb.path=\(folder)/data",
                "--web.listen-address=127.0.0.1:0",
            ])
            options.ownProcessGroup = true  // a Ctrl-C at the test's terminal is not its to handle
            options.stderr = .lines(maxLength: 8192, keep: 5000)
            let child = try await onOwnThread(named: "skynet-test-prometheus") { [options] in try ChildProcess.spawn(binary, options) }
            guard let port = await readiness(of: child) else {
                let lines = child.stderrLines?.lines ?? []
                await child.stop(grace: .zero)
                throw PrometheusError("prometheus did not become ready within 30 s: \(lines.suffix(10).joined(separator: " | "))")
            }
            let server = PrometheusServer(port: port, child: child, folder: folder)
            guard try await server.get("/-/ready").status == 200 else {
                await server.stop()
                throw PrometheusError("prometheus's /-/ready did not answer 200")
            }
            return server
        } catch {
            try? FileManager.default.removeItem(atPath: folder)
            throw error
        }
    }

    /// Awaits both `msg="Listening on" address=127.0.0.1:N` and `Server is ready to receive web
    /// requests.` (within 30 s); N, or nil. Prometheus logs them from different goroutines, so
    /// either may come first.
    private static func readiness(of child: ChildProcess) async -> Int? {
        guard let log = child.stderrLines else { return nil }
        let lines: (String?, String?)? = try? await withTimeout(.seconds(30)) {
            async let listening = log.first { $0.contains(#"msg="Listening on""#) }
            async let ready = log.first { $0.contains("Server is ready to receive web requests.") }
            return await (listening, ready)
        }
        guard let (listening, ready) = lines, ready != nil, let listening,
              let address = listening.split(separator: " ").first(where: { $0.hasPrefix("address=") }),
              let port = Int(address.split(separator: ":").last ?? "") else { return nil }
        return port
    }

    /// SIGTERM, then SIGKILL after 10 s; the scratch folder removed.
    package func stop() async {
        _ = await child.stop(grace: .seconds(10))
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The `data.result` of an instant query through `/api/v1/query`: each series' labels
    /// and value.
    package func query(_ promql: String) async throws -> [(labels: [String: String], value: Double)] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = promql.addingPercentEncoding(withAllowedCharacters: allowed) ?? promql
        let response = try await get("/api/v1/query?query=\(encoded)")
        guard response.status == 200,
              let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
              object["status"] as? String == "success",
              let data = object["data"] as? [String: Any], let result = data["result"] as? [[String: Any]] else {
            throw PrometheusError("query \(promql): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
        return result.compactMap { series in
            guard let labels = series["metric"] as? [String: String], let pair = series["value"] as? [Any],
                  pair.count == 2, let text = pair[1] as? String, let value = Double(text) else { return nil }
            return (labels, value)
        }
    }

    /// `GET path` over HTTP/1.0 (so the body is never chunked), read to the end.
    package func get(_ path: String) async throws -> (status: Int, body: [UInt8]) {
        let port = self.port
        let bytes = try await onOwnThread(named: "skynet-test-prometheus-get") { () throws -> [UInt8] in
            let socket = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(10))
            defer { socket.close() }
            _ = try socket.send(Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8), wait: true)
            socket.setReceiveTimeout(.seconds(10))
            var bytes: [UInt8] = []
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
            defer { chunk.deallocate() }
            while bytes.count < 16 << 20, let count = try? socket.receive(into: chunk), count > 0 { bytes += chunk[..<count] }
            return bytes
        }
        let separator = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }),
              let status = String(decoding: bytes[..<end], as: UTF8.self).split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            throw PrometheusError("not an HTTP response from prometheus: \(String(decoding: bytes.prefix(200), as: UTF8.self))")
        }
        return (status, Array(bytes[(end + 4)...]))
    }
}

/// Runs `body` with a Prometheus scraping `targets`, stopped (and its folder removed) on every path.
package func withPrometheus<T>(targets: [String: Int], _ body: (PrometheusServer) async throws -> T) async throws -> T {
    let server = try await PrometheusServer.start(targets: targets)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

package struct PrometheusError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
