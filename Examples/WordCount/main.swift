// A Swift job over a small cluster in one process: this program's own system and a `Node`
// on 127.0.0.1 (port 0) both register the same CPU-bound job; a coordinator spreads the
// inputs over them and prints each result. Run: swift run skynet-example-wordcount
import Foundation
import SkyNet

let lines = [
    "the quick brown fox jumps over the lazy dog",
    "a node runs only the jobs its operator declared",
    "a coordinator chooses a job by name and sends inputs, never commands",
    "CPU-bound work runs on threads of its own",
    "never on the cooperative pool",
    "one line, one task",
]

// The job: words and the most frequent letter of the input. `blocking:` work computes, so
// it runs on a thread of its own.
var jobs = JobRegistry()
try jobs.register("wordcount", summary: "words and most frequent letter", blocking: { request in
    let words = request.input.split(whereSeparator: \.isWhitespace).count
    var letters: [Character: Int] = [:]
    for character in request.input.lowercased() where character.isLetter { letters[character, default: 0] += 1 }
    let top = letters.max { ($0.value, $1.key) < ($1.value, $0.key) }.map { "\($0.key)×\($0.value)" } ?? "-"
    return "\(words) words, top letter \(top)"
})

// A node serving the same jobs on a free loopback port.
var options = Node.Options(name: "node1")
options.capacity = 2
options.jobs = jobs
let node = try await Node.start(options)

// The coordinator: its own system first, then the node as a peer.
let systems = Systems()
await systems.add(LocalSystem(name: "local", capacity: 1, jobs: jobs), capacity: 1)
let links = PeerLinks(cluster: ClusterConfig(nodes: [.init(name: "node1", host: node.host, port: node.port)]),
                      systems: systems, settings: .init(capacity: 2)) { _ in }
// Wait (up to 5 s) for the node to join, so the example shows both systems at work.
for _ in 0..<500 where await !systems.names.contains("node1") { try await Task.sleep(for: .milliseconds(10)) }

let coordinator = Coordinator(systems: systems) { event in
    if case .completed(let task, let result, let system, _, _, _) = event {
        print("\(task.input) [\(system)] \(result)")
    }
}
let report = await coordinator.run(lines.enumerated().map { ScanTask(input: $0.offset, job: "wordcount", text: $0.element) })
print("\(report.completed) of \(report.total) lines done: \(report.completedBySystem.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
await links.stop()
await node.stop()
