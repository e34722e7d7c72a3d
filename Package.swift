// swift-tools-version:6.2
import PackageDescription

// The root package depends on no other Swift package: only the toolchain's Glibc, Synchronization,
// Dispatch and FoundationEssentials. Benchmarks/ is a separate package with its own dependencies.
let package = Package(
    name: "EpollLoop",
    products: [
        .library(name: "EpollLoop", targets: ["EpollLoop"]),
        .library(name: "LoopSocket", targets: ["LoopSocket"]),
    ],
    targets: [
        .target(
            name: "CEpollShim",
            path: "CEpollShim",
            cSettings: [.define("_GNU_SOURCE")]
        ),
        .target(
            name: "EpollLoop",
            dependencies: ["CEpollShim"]
        ),
        .target(
            name: "LoopSocket",
            dependencies: ["EpollLoop", "CEpollShim"]
        ),
        .target(
            name: "ExampleSupport",
            dependencies: ["EpollLoop"],
            path: "Sources/ExampleSupport"
        ),
        .executableTarget(
            name: "echo-server",
            dependencies: ["EpollLoop", "LoopSocket", "ExampleSupport"]
        ),
        .executableTarget(
            name: "async-echo-server",
            dependencies: ["EpollLoop", "LoopSocket", "ExampleSupport"]
        ),
        .executableTarget(
            name: "http-hello",
            dependencies: ["EpollLoop", "LoopSocket", "ExampleSupport"]
        ),
        .executableTarget(
            name: "udp-echo-server",
            dependencies: ["EpollLoop", "LoopSocket", "ExampleSupport"]
        ),
        .target(
            name: "LoadTest",
            dependencies: ["EpollLoop", "LoopSocket", "CEpollShim"]
        ),
        .executableTarget(
            name: "loadtest",
            dependencies: ["LoadTest", "EpollLoop", "LoopSocket"]
        ),
        // Helpers more than one test target needs (listing the process's open descriptors).
        .target(
            name: "SharedTestSupport",
            path: "Tests/SharedTestSupport"
        ),
        .testTarget(
            name: "EpollLoopTests",
            dependencies: ["EpollLoop", "CEpollShim", "SharedTestSupport"]
        ),
        .testTarget(
            name: "LoopSocketTests",
            dependencies: ["LoopSocket", "EpollLoop", "CEpollShim", "SharedTestSupport"]
        ),
        .testTarget(
            name: "LoadTestTests",
            dependencies: ["LoadTest", "EpollLoop", "LoopSocket", "SharedTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
