import Benchmark
import Dispatch

// The socket echo path, LoopSocket beside SwiftNIO: 64-byte ping-pong over loopback.
//
// One iteration = `roundTrips` (10,000) round trips on one established connection. Wall time and process-wide
// mallocs are per iteration; the custom metrics give nanoseconds per round trip, and docs/benchmarks.md divides
// mallocCountTotal by 10,000 for mallocs per round trip. The first iteration is a warm-up (not measured), so
// buffers and queues have grown when measuring starts. Connections are made before anything is measured.
//
// 1. Client and server on ONE loop (the same thread): the whole round trip is two writes, two reads and the
//    epoll work in between, with no thread hop. LoopSocket: a GCDAsyncSocket client (write 64 B, readData
//    toLength 64) against the echo-server's delegate (readData, write back). SwiftNIO: a ChannelInboundHandler
//    client against the echo handler of nio-echo-server, both on one MultiThreadedEventLoopGroup thread.
//    Mallocs count both ends.
// 2. Server on its loop, client a plain blocking socket on the benchmark thread (no allocation of its own):
//    every malloc counted is the server's, the figure issue 4's "mallocs per echo round trip on the delegate
//    path" target is about. Wall time includes a thread wake-up each way.

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .contextSwitches, RoundTripMetric.wall, RoundTripMetric.cpu],
        timeUnits: .microseconds,
        units: [.mallocCountTotal: .count, .contextSwitches: .count, RoundTripMetric.wall: .count, RoundTripMetric.cpu: .count],
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 20
    )

    let prepare: Benchmark.BenchmarkSetupHook = {
        _ = epollPair.client
        _ = nioPair.client
        _ = epollRawPair.client
        _ = nioRawPair.client
    }
    let configuration = Benchmark.Configuration(setup: prepare)

    Benchmark("Echo 64 B: 10k round trips, client+server on 1 loop, LoopSocket", configuration: configuration) { benchmark in
        let clock = RoundTripClock.start()
        epollPair.run(roundTrips)
        clock.report(to: benchmark, roundTrips: roundTrips)
    }

    Benchmark("Echo 64 B: 10k round trips, client+server on 1 loop, SwiftNIO", configuration: configuration) { benchmark in
        let clock = RoundTripClock.start()
        nioPair.run(roundTrips)
        clock.report(to: benchmark, roundTrips: roundTrips)
    }

    Benchmark("Echo 64 B: 10k round trips, server only (blocking client thread), LoopSocket", configuration: configuration) { benchmark in
        let clock = RoundTripClock.start()
        epollRawPair.client.run(roundTrips)
        clock.report(to: benchmark, roundTrips: roundTrips)
    }

    Benchmark("Echo 64 B: 10k round trips, server only (blocking client thread), SwiftNIO", configuration: configuration) { benchmark in
        let clock = RoundTripClock.start()
        nioRawPair.client.run(roundTrips)
        clock.report(to: benchmark, roundTrips: roundTrips)
    }
}
