// swift-tools-version:6.2
import PackageDescription

// The root package depends on no other Swift package: only the toolchain's Glibc, Synchronization,
// Dispatch and FoundationEssentials, and the system OpenSSL 3 for TLS (headers: Debian's libssl-dev).
// Benchmarks/ is a separate package with its own dependencies.
let package = Package(
    name: "EpollLoop",
    products: [
        .library(name: "EpollLoop", targets: ["EpollLoop"]),
        .library(name: "LoopSocket", targets: ["LoopSocket"]),
        // `import CocoaAsyncSocket`, unchanged: LoopSocket under the module name Apple apps import.
        .library(name: "CocoaAsyncSocket", targets: ["CocoaAsyncSocket"]),
        // loadtest's engine and its LoadProtocol API: a load generator for your own protocol.
        .library(name: "LoadTest", targets: ["LoadTest"]),
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
        // The system OpenSSL 3 (libssl, libcrypto) and the few C pieces TLS needs (macros, callbacks, the BIO).
        .target(
            name: "COpenSSL",
            path: "Sources/COpenSSL",
            linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]
        ),
        .target(
            name: "LoopSocket",
            dependencies: ["EpollLoop", "CEpollShim", "COpenSSL"]
        ),
        // LoopSocket and what CocoaAsyncSocket's module gives an app besides its own names (Foundation,
        // Dispatch), so that files written for Apple platforms build here without an edit.
        .target(
            name: "CocoaAsyncSocket",
            dependencies: ["LoopSocket"]
        ),
        .target(
            name: "ExampleSupport",
            dependencies: ["EpollLoop", "LoopSocket"],
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
        // http-hello's HTTP/1.1 handling (request parsing, bodies, responses), testable on its own.
        .target(
            name: "HTTPHello",
            dependencies: ["LoopSocket"]
        ),
        .executableTarget(
            name: "http-hello",
            dependencies: ["EpollLoop", "LoopSocket", "ExampleSupport", "HTTPHello"]
        ),
        .executableTarget(
            name: "udp-echo-server",
            dependencies: ["EpollLoop", "LoopSocket", "ExampleSupport"]
        ),
        .target(
            name: "LoadTest",
            dependencies: ["EpollLoop", "LoopSocket", "CEpollShim", "ExampleSupport"]
        ),
        .executableTarget(
            name: "loadtest",
            dependencies: ["LoadTest", "EpollLoop", "LoopSocket"]
        ),
        // MQTT 3.1.1 publishers at QoS 1: an example of a load generator built on LoadTest's LoadProtocol.
        .executableTarget(
            name: "mqtt-load",
            dependencies: ["LoadTest"]
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
            name: "HTTPHelloTests",
            dependencies: ["HTTPHello", "LoopSocket", "EpollLoop", "SharedTestSupport"]
        ),
        // CocoaAsyncSocket's Swift interface on Apple platforms, every declaration in that spelling: a renamed
        // symbol fails the build.
        .testTarget(
            name: "AppleSpellingTests",
            dependencies: ["CocoaAsyncSocket"]
        ),
        // CocoaAsyncSocket's own test suite (Tests/Shared), through `import CocoaAsyncSocket`: its Swift files
        // as written, so in the Swift 5 language mode they were written for; its Objective-C files translated.
        // Also builds a tiny app package against this one (Fixtures/DualPlatformApp).
        .testTarget(
            name: "CocoaAsyncSocketTests",
            dependencies: ["CocoaAsyncSocket", "SharedTestSupport"],
            exclude: ["Fixtures"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // The fuzz targets: one function per parser that reads bytes from the network (or a file a user points
        // the library at), each checking properties, not only that it returns. Not a product.
        .target(
            name: "FuzzTargets",
            dependencies: ["HTTPHello", "LoadTest", "LoopSocket", "COpenSSL"]
        ),
        // The targets as one executable: replays inputs when built normally, a libFuzzer binary when built
        // by scripts/fuzz.sh (-sanitize=fuzzer -DFUZZING).
        .executableTarget(
            name: "fuzz",
            dependencies: ["FuzzTargets"]
        ),
        // Replays the seed corpus and every regression input (Tests/Fuzz) through the targets.
        .testTarget(
            name: "FuzzTargetsTests",
            dependencies: ["FuzzTargets", "HTTPHello", "LoopSocket"],
            path: "Tests/FuzzTargetsTests"
        ),
        .testTarget(
            name: "LoadTestTests",
            dependencies: ["LoadTest", "EpollLoop", "LoopSocket", "SharedTestSupport", "HTTPHello"]
        ),
        // A perf-test suite to copy: echo-server's and http-hello's servers started in the test, loaded through
        // LoadTest's public API (no @testable import), XCTest and Swift Testing cases.
        .testTarget(
            name: "PerfTestExamples",
            dependencies: ["LoadTest", "EpollLoop", "LoopSocket", "HTTPHello"]
        ),
        // Allocations per operation of the example servers and loadtest, counted by a malloc hook the test
        // compiles and preloads into them (not linked here: the sanitizer builds intercept malloc themselves),
        // against the limits in allocation-limits.json.
        .testTarget(
            name: "AllocationCounterTests",
            dependencies: ["SharedTestSupport", "COpenSSL"],
            exclude: ["alloc-counter.c", "allocation-limits.json"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
