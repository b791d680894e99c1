// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "SkyNet",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "skynet", targets: ["SkyNetCLI"]),
        .executable(name: "skynet-bench", targets: ["SkyNetBench"]),
        .executable(name: "skynet-example-wordcount", targets: ["SkyNetExampleWordCount"]),
        .library(name: "SkyNet", targets: ["SkyNet"]),
    ],
    targets: [
        .target(name: "SkyNet"),
        .executableTarget(name: "SkyNetCLI", dependencies: ["SkyNet"]),
        // The benchmark: `swift run -c release skynet-bench` (see BENCHMARKS.md).
        .executableTarget(name: "SkyNetBench", dependencies: ["SkyNet"]),
        // A Swift job on a coordinator and an in-process node: `swift run skynet-example-wordcount`.
        .executableTarget(name: "SkyNetExampleWordCount", dependencies: ["SkyNet"], path: "Examples/WordCount"),
        // What both test targets use (a seeded random source for the fuzz tests).
        .target(name: "SkyNetTestSupport", dependencies: ["SkyNet"], path: "Tests/SkyNetTestSupport"),
        .testTarget(name: "SkyNetTests", dependencies: ["SkyNet", "SkyNetTestSupport"]),
        // Depends on the executable so that `swift test` builds `skynet` beside the test bundle.
        .testTarget(name: "SkyNetClusterTests", dependencies: ["SkyNet", "SkyNetCLI", "SkyNetTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
