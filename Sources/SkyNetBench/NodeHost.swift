import Foundation
import SkyNet
import SkyNetNode
import SkyNetRuntime

/// `skynet-bench node-host COUNT FILE`: COUNT cheap nodes in this one process (W15), each a
/// `Node` on a loopback port of its own (4 slots, the built-in scan, no failures). Once all
/// listen, FILE gets their cluster entries, one per line, and stdout says `ready`. The host
/// lives until its stdin ends (its parent's pipe: it dies with the benchmark).
enum NodeHost {
    static func serve(_ arguments: [String]) -> Never {
        guard arguments.count == 2, let count = Int(arguments[0]), (1...20_000).contains(count) else {
            note("usage: skynet-bench node-host COUNT(1-20000) FILE")
            exit(2)
        }
        let file = arguments[1]
        DescriptorLimit.raiseToMaximum()
        Socket.ignoreBrokenPipes()
        ParentWatch.start(backstop: .seconds(1)) { exit(0) }
        do {
            let nodes = try blocking {
                var nodes: [Node] = []
                for index in 0..<count {
                    var options = Node.Options(name: "h\(ProcessInfo.processInfo.processIdentifier)-\(index)")
                    options.failingEvery = 0
                    nodes.append(try await Node.start(options))
                }
                return nodes
            }
            let entries = nodes.map { #"{"name":"\#($0.options.name)","host":"\#($0.host)","port":\#($0.port)}"# }
            try entries.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let ready = Array("ready\n".utf8)
            _ = ready.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            while true { withExtendedLifetime(nodes) { _ = pause() } }
        } catch {
            note("node-host: \(error)")
            exit(1)
        }
    }
}
