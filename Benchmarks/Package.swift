// swift-tools-version:6.1
import PackageDescription

// Benchmarks for EpollLoop against SwiftNIO, kept out of the root package so that the runtime itself
// depends on no other package. Run from this directory:
//
//     swift package --disable-sandbox benchmark          # package-benchmark suite (release build)
//     swift run -c release timer-memory                  # bytes per pending timer, both libraries
//
// or ./run.sh, which does both.
let package = Package(
    name: "EpollLoopBenchmarks",
    dependencies: [
        .package(name: "EpollLoop", path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", "2.37.0"..<"2.38.0"),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1",
                 traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "LoopBenchmarks",
            dependencies: [
                .product(name: "EpollLoop", package: "EpollLoop"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/LoopBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        .target(name: "CMallocStats"),
        .executableTarget(
            name: "timer-memory",
            dependencies: [
                "CMallocStats",
                .product(name: "EpollLoop", package: "EpollLoop"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Socket echo path and the loop as a Swift concurrency executor, beside SwiftNIO (package-benchmark).
        .executableTarget(
            name: "SocketBenchmarks",
            dependencies: [
                .product(name: "EpollLoop", package: "EpollLoop"),
                .product(name: "LoopSocket", package: "EpollLoop"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/SocketBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "ExecutorBenchmarks",
            dependencies: [
                .product(name: "EpollLoop", package: "EpollLoop"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/ExecutorBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // SwiftNIO peer servers for compare.sh (same flags and "listening ... port P" line as ours).
        .target(name: "PeerServerSupport"),
        .target(
            name: "PeerNIOSupport",
            dependencies: [
                "PeerServerSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "nio-echo-server",
            dependencies: [
                "PeerNIOSupport",
                "PeerServerSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "udp-gso",
            dependencies: [
                .product(name: "EpollLoop", package: "EpollLoop"),
                .product(name: "LoopSocket", package: "EpollLoop"),
            ]
        ),
        .executableTarget(
            name: "nio-udp-echo-server",
            dependencies: [
                "PeerServerSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "nio-async-echo-server",
            dependencies: [
                "PeerServerSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "nio-http-server",
            dependencies: [
                "PeerNIOSupport",
                "PeerServerSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // HTTPS peer of http-hello --tls-cert/--tls-key for tls-compare.sh (swift-nio-ssl, BoringSSL inside).
        .executableTarget(
            name: "nio-https-server",
            dependencies: [
                "PeerNIOSupport",
                "PeerServerSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
