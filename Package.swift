// swift-tools-version: 6.0
import PackageDescription

/// The library's parts, bottom up: each is a target so that the compiler refuses a dependency
/// that runs the wrong way (docs/ARCHITECTURE.md).
let parts: [Target.Dependency] = [
    "SkyNetRuntime", "SkyNetTransport", "SkyNetAuth", "SkyNetWork", "SkyNetWire", "SkyNetMetrics",
    "SkyNetScheduler", "SkyNetTransfer", "SkyNetJournal", "SkyNetLink", "SkyNetSSH", "SkyNetNode",
    "SkyNetCluster", "SkyNetHTTP", "SkyNetDashboard", "SkyNetActors",
]

/// Every warning an error where SKYNET_WARNINGS_AS_ERRORS=1 (`.ci/run` sets it). Here rather than
/// `-Xswiftc -warnings-as-errors` so that `swift build` and `swift test` compile with the same
/// flags and the test step reuses what the build step compiled; setting or unsetting the
/// variable compiles everything again.
let warningsAsErrors: [SwiftSetting] = Context.environment["SKYNET_WARNINGS_AS_ERRORS"] == "1"
    ? [.unsafeFlags(["-warnings-as-errors"])] : []

/// One unit-test target per library target, in `Tests/<target>Tests`: each reaches into its
/// part with `@testable import`, and into the others it drives (a node for a peer link's test).
let unitTestTargets: [Target] = [
    "SkyNetRuntime", "SkyNetTransport", "SkyNetAuth", "SkyNetWork", "SkyNetWire", "SkyNetMetrics", "SkyNetHTTP",
    "SkyNetScheduler", "SkyNetTransfer", "SkyNetJournal", "SkyNetSSH", "SkyNetNode", "SkyNetCluster", "SkyNetDashboard",
    "SkyNetActors", "SkyNet",
].map { part in
    .testTarget(name: part + "Tests", dependencies: ["SkyNet", "SkyNetCommands", "SkyNetTestSupport"] + parts)
}

let package = Package(
    name: "SkyNet",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "skynet", targets: ["SkyNetCLI"]),
        .executable(name: "skynet-bench", targets: ["SkyNetBench"]),
        .executable(name: "skynet-example-wordcount", targets: ["SkyNetExampleWordCount"]),
        .executable(name: "skynet-example-actors", targets: ["SkyNetExampleActors"]),
        .library(name: "SkyNet", targets: ["SkyNet"]),
    ],
    targets: [
        // The system calls of readiness that Swift's C library modules leave out (epoll, kqueue).
        .target(name: "CSkyNetPlatform"),
        // Locks, threads, the timer, the event loop, the line splitter, child processes.
        .target(name: "SkyNetRuntime", dependencies: ["CSkyNetPlatform"]),
        // Sockets, the listener, connections that carry lines (through filters given to them).
        .target(name: "SkyNetTransport", dependencies: ["SkyNetRuntime"]),
        // SHA-256, HMAC, the token handshake's proofs, sealed lines, failed logins.
        .target(name: "SkyNetAuth", dependencies: ["SkyNetRuntime"]),
        // The work: scan tasks, jobs, their failures; knows no network.
        .target(name: "SkyNetWork", dependencies: ["SkyNetRuntime"]),
        // The messages of docs/PROTOCOL.md and their validation: knows the work, not the network.
        .target(name: "SkyNetWire", dependencies: ["SkyNetRuntime", "SkyNetWork"]),
        // Prometheus's text format, the families a process shows, tasks by job and outcome.
        .target(name: "SkyNetMetrics", dependencies: ["SkyNetRuntime", "SkyNetWork"]),
        // A small HTTP/1.1 and event-stream server, and the `/metrics` and `/healthz` routes.
        .target(name: "SkyNetHTTP", dependencies: ["SkyNetRuntime", "SkyNetTransport", "SkyNetMetrics"]),
        // Which system runs which task: the registry of systems, the work queue, the coordinator,
        // the local system. Knows no network: a peer's failure reaches it as a `SystemFailure`.
        .target(name: "SkyNetScheduler", dependencies: ["SkyNetRuntime", "SkyNetWork", "SkyNetWire", "SkyNetMetrics"]),
        // Files that travel with tasks: work roots, uploads, the file pump, returned files.
        .target(name: "SkyNetTransfer", dependencies: ["SkyNetRuntime", "SkyNetTransport", "SkyNetAuth", "SkyNetWork", "SkyNetWire", "SkyNetScheduler"]),
        // The scan journal behind --joblog and --resume.
        .target(name: "SkyNetJournal", dependencies: ["SkyNetRuntime", "SkyNetAuth", "SkyNetWork", "SkyNetWire", "SkyNetTransfer"]),
        // A dialed channel to a node, before and after its handshake: the dialer, sealed lines.
        .target(name: "SkyNetLink", dependencies: ["SkyNetRuntime", "SkyNetTransport", "SkyNetAuth", "SkyNetWire"]),
        // Nodes over ssh: logins, the ssh child as a channel, shipping the binary.
        .target(name: "SkyNetSSH", dependencies: ["SkyNetRuntime", "SkyNetTransport", "SkyNetAuth", "SkyNetWork", "SkyNetWire", "SkyNetLink"]),
        // The node: sessions, admission, drain, its files and metrics.
        .target(name: "SkyNetNode", dependencies: ["SkyNetRuntime", "SkyNetTransport", "SkyNetAuth", "SkyNetWork", "SkyNetWire", "SkyNetMetrics", "SkyNetScheduler", "SkyNetTransfer", "SkyNetLink", "SkyNetActors"]),
        // The coordinator's cluster: the cluster file, the links to its peers, spawned nodes.
        .target(name: "SkyNetCluster", dependencies: ["SkyNetRuntime", "SkyNetTransport", "SkyNetAuth", "SkyNetWork", "SkyNetWire", "SkyNetScheduler", "SkyNetTransfer", "SkyNetLink", "SkyNetSSH", "SkyNetActors"]),
        // The dashboard: its page and the board it streams, served by SkyNetHTTP.
        .target(name: "SkyNetDashboard", dependencies: ["SkyNetRuntime", "SkyNetTransport", "SkyNetAuth", "SkyNetWire", "SkyNetMetrics", "SkyNetScheduler", "SkyNetCluster", "SkyNetHTTP"]),
        // Swift's distributed actors over SkyNet: the actor system, its IDs, calls as JSON.
        .target(name: "SkyNetActors", dependencies: ["SkyNetRuntime", "SkyNetAuth", "SkyNetWork", "SkyNetWire", "SkyNetMetrics"]),
        // The programs: `skynet`'s commands (node, scan, status), and a program of the library's
        // own that serves as its node and links to nodes of itself (`ClusterProgram`).
        .target(name: "SkyNetCommands", dependencies: ["SkyNetOptions"] + parts),
        // The one import for users: re-exports the parts. What imports it here also lists the
        // parts, so that a change to one rebuilds it: SkyNet's own module does not change then.
        .target(name: "SkyNet", dependencies: ["SkyNetCommands"] + parts),
        // One option table per command: parsing, usage, help, a spawned node's arguments.
        .target(name: "SkyNetOptions"),
        .executableTarget(name: "SkyNetCLI", dependencies: ["SkyNetCommands", "SkyNetRuntime"]),
        // The benchmark: `swift run -c release skynet-bench` (see BENCHMARKS.md).
        // W13 and W14 run real sshd hosts (SkyNetLocalHosts).
        .executableTarget(name: "SkyNetBench", dependencies: ["SkyNet", "SkyNetCommands", "SkyNetOptions", "SkyNetLocalHosts"] + parts),
        // A Swift job on a coordinator and an in-process node: `swift run skynet-example-wordcount`.
        .executableTarget(name: "SkyNetExampleWordCount", dependencies: ["SkyNet", "SkyNetCommands"] + parts, path: "Examples/WordCount"),
        // The book's scan over distributed actors on nodes of its own binary: `swift run skynet-example-actors`.
        .executableTarget(name: "SkyNetExampleActors", dependencies: ["SkyNet", "SkyNetCommands"] + parts, path: "Examples/Actors"),
        // Throwaway hosts on this machine: sshd with temporary keys, on loopback or in network
        // namespaces, and GNU parallel found on PATH. The ssh benchmarks (W13, W14) and the tests
        // start the same real hosts.
        .target(name: "SkyNetLocalHosts", dependencies: ["SkyNet", "SkyNetCommands"] + parts),
        // What the test targets share: fakes, sandboxes, the manual clock, Chromium, PNG checks.
        .target(name: "SkyNetTestSupport", dependencies: ["SkyNet", "SkyNetCommands", "SkyNetLocalHosts"] + parts, path: "Tests/SkyNetTestSupport"),
    ] + unitTestTargets + [
        // The tests that start real processes (`skynet`, sshd, Chromium, Prometheus), one suite
        // at a time. They depend on the executables so that `swift test` builds `skynet` and
        // `skynet-bench` beside the test bundle.
        .testTarget(name: "SkyNetProcessTests", dependencies: ["SkyNet", "SkyNetCLI", "SkyNetCommands", "SkyNetBench", "SkyNetExampleActors", "SkyNetOptions", "SkyNetTestSupport", "SkyNetLocalHosts"] + parts),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.name != "CSkyNetPlatform" {
    target.swiftSettings = (target.swiftSettings ?? []) + warningsAsErrors
}
