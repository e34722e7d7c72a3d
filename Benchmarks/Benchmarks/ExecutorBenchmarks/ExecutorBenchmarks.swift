import Benchmark
import Dispatch

// The event loop as a Swift concurrency executor (issue 5), EpollLoop beside SwiftNIO's EventLoop executor
// (`NIOSerialEventLoopExecutor`, which SwiftNIO 2.101's `SelectableEventLoop` adopts: its jobs go into the
// loop's task queue without a closure).
//
// Each library gets a global actor whose executor is its loop 0, and plain actors on loops 0 and 1.
// One iteration = one batch (1,000,000 jobs, or 100,000 round trips); divide by the batch size for
// per-job figures. The first iteration is a warm-up.
//
// 1. 1M jobs enqueued FROM THE LOOP: a task on the loop's actor creates `Task { ... }` children, which inherit
//    the actor's isolation and so are enqueued on the loop from the loop itself; it yields after every 1,000
//    so they run before it goes on (at most ~1,000 tasks alive).
// 2. 1M jobs enqueued FROM ANOTHER THREAD: the benchmark thread creates `Task { @LoopActor in ... }`, each
//    enqueued straight onto the loop (SE-0431 `@isolated(any)`: no hop through the global pool). EpollLoop
//    also with `Task(executorPreference: loop)` (SwiftNIO's loops are not `TaskExecutor`s).
// 3. Actor ping-pong between two loops: an actor on loop 0 awaits a method of an actor on loop 1, 100,000
//    times: each round trip is two executor switches across threads.

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident, .contextSwitches],
        timeUnits: .milliseconds,
        units: [.mallocCountTotal: .count, .contextSwitches: .count],
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 10
    )

    let prepare: Benchmark.BenchmarkSetupHook = {
        _ = epollLoops.count
        _ = nioLoops.count
        _ = epollPing
        _ = nioPing
    }
    let configuration = Benchmark.Configuration(setup: prepare)

    // MARK: 1. Jobs from the loop

    Benchmark("Jobs: 1M Task {} from the loop, EpollLoop", configuration: configuration) { _ in
        Task { @EpollLoopActor in await EpollLoopActor.spawnFromLoop(jobCount) }
        batchDone.wait()
    }

    Benchmark("Jobs: 1M Task {} from the loop, SwiftNIO", configuration: configuration) { _ in
        Task { @NIOLoopActor in await NIOLoopActor.spawnFromLoop(jobCount) }
        batchDone.wait()
    }

    // MARK: 2. Jobs from another thread

    Benchmark("Jobs: 1M Task { @LoopActor } from another thread, EpollLoop", configuration: configuration) { _ in
        JobCounter.epoll.reset(jobCount)
        for _ in 0..<jobCount {
            Task { @EpollLoopActor in JobCounter.epoll.tick() }
        }
        batchDone.wait()
    }

    Benchmark("Jobs: 1M Task { @LoopActor } from another thread, SwiftNIO", configuration: configuration) { _ in
        JobCounter.nio.reset(jobCount)
        for _ in 0..<jobCount {
            Task { @NIOLoopActor in JobCounter.nio.tick() }
        }
        batchDone.wait()
    }

    Benchmark("Jobs: 1M Task(executorPreference: loop) from another thread, EpollLoop", configuration: configuration) { _ in
        let loop = epollLoops[0]
        JobCounter.epoll.reset(jobCount)
        for _ in 0..<jobCount {
            Task(executorPreference: loop) { JobCounter.epoll.tick() }
        }
        batchDone.wait()
    }

    // MARK: 3. Actor ping-pong between two loops

    let pingPongConfiguration = Benchmark.Configuration(maxIterations: 5, setup: prepare)

    Benchmark("Actors: 100k ping-pong round trips between 2 loops, EpollLoop", configuration: pingPongConfiguration) { _ in
        let ping = epollPing
        Task { await ping.run(pingPongRoundTrips) }
        batchDone.wait()
    }

    Benchmark("Actors: 100k ping-pong round trips between 2 loops, SwiftNIO", configuration: pingPongConfiguration) { _ in
        let ping = nioPing
        Task { await ping.run(pingPongRoundTrips) }
        batchDone.wait()
    }
}
