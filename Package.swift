// swift-tools-version:6.0
import PackageDescription

// The root package depends on no other Swift package: only the toolchain's Glibc, Synchronization,
// Dispatch and FoundationEssentials. Benchmarks/ is a separate package with its own dependencies.
let package = Package(
    name: "EpollLoop",
    products: [
        .library(name: "EpollLoop", targets: ["EpollLoop"]),
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
        .executableTarget(
            name: "loop-demo",
            dependencies: ["EpollLoop"]
        ),
        .testTarget(
            name: "EpollLoopTests",
            dependencies: ["EpollLoop", "CEpollShim"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
