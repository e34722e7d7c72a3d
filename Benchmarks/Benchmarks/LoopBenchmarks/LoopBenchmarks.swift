import Benchmark
import EpollLoop
import NIOCore
import NIOPosix

// Every benchmark exists once for EpollLoop and once for SwiftNIO (MultiThreadedEventLoopGroup) and does
// the same work on both. One iteration is one whole batch (1,000,000 timers, 100,000 round trips, ...):
// divide the reported wall time and malloc count by the batch size for per-operation figures
// (docs/benchmarks.md does). The first iteration of each benchmark is a warm-up and is not measured, so
// the loops' queues and timer storage have already grown to size when measuring starts.

let benchmarks: @Sendable () -> Void = {
    let loopMetrics: [BenchmarkMetric] = [
        .wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident, .contextSwitches,
    ]
    let timerMetrics: [BenchmarkMetric] = [
        .wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident,
    ] + TimerMetric.all
    // Counts and the custom per-timer metrics are printed as plain numbers, not scaled to K or M.
    var plainUnits: [BenchmarkMetric: BenchmarkUnits] = [.mallocCountTotal: .count, .contextSwitches: .count]
    for metric in TimerMetric.all {
        plainUnits[metric] = .count
    }

    Benchmark.defaultConfiguration = .init(
        metrics: loopMetrics,
        timeUnits: .microseconds,
        units: plainUnits,
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 10
    )

    // Make the loops, handle arrays and deadlines before anything is measured.
    let prepare: Benchmark.BenchmarkSetupHook = {
        _ = epollGroup.loops.count
        _ = nioLoops.count
        _ = firingDelays.count
        _ = epollTimerHandles.value.capacity
        _ = nioTimerHandles.value.capacity
        _ = nioCallbackHandles.value.capacity
    }

    // MARK: 1. Schedule 1,000,000 timers 60 s out, then cancel them all (on the loop, in one task)

    let timerConfiguration = Benchmark.Configuration(metrics: timerMetrics, maxIterations: 10, setup: prepare)

    Benchmark("Timers: schedule+cancel 1M, EpollLoop", configuration: timerConfiguration) { benchmark in
        let loop = epollGroup.loops[0]
        try! loop.execute {
            // Taken out of its box for the batch, so the loop pays no exclusivity check per append.
            var handles = epollTimerHandles.take()
            phaseTimes.start = .now()
            for _ in 0..<cancelledTimerCount {
                handles.append(try! loop.schedule(after: .seconds(60)) {})
            }
            phaseTimes.scheduled = .now()
            for timer in handles {
                timer.cancel()
            }
            phaseTimes.cancelled = .now()
            handles.removeAll(keepingCapacity: true)
            epollTimerHandles.value = handles
            iterationDone.signal()
        }
        iterationDone.wait()
        phaseTimes.report(to: benchmark)
    }

    Benchmark("Timers: schedule+cancel 1M, SwiftNIO scheduleTask", configuration: timerConfiguration) { benchmark in
        let loop = nioLoops[0]
        loop.execute {
            // Taken out of its box for the batch, so the loop pays no exclusivity check per append.
            var handles = nioTimerHandles.take()
            phaseTimes.start = .now()
            for _ in 0..<cancelledTimerCount {
                handles.append(loop.scheduleTask(in: .seconds(60)) {})
            }
            phaseTimes.scheduled = .now()
            for timer in handles {
                timer.cancel()
            }
            phaseTimes.cancelled = .now()
            handles.removeAll(keepingCapacity: true)
            nioTimerHandles.value = handles
            iterationDone.signal()
        }
        iterationDone.wait()
        phaseTimes.report(to: benchmark)
    }

    // SwiftNIO's allocation-light timer API (a handler value instead of a closure and a promise).
    Benchmark("Timers: schedule+cancel 1M, SwiftNIO scheduleCallback", configuration: timerConfiguration) { benchmark in
        let loop = nioLoops[0]
        loop.execute {
            // Taken out of its box for the batch, so the loop pays no exclusivity check per append.
            var handles = nioCallbackHandles.take()
            phaseTimes.start = .now()
            for _ in 0..<cancelledTimerCount {
                handles.append(try! loop.scheduleCallback(in: .seconds(60), handler: NoopCallback()))
            }
            phaseTimes.scheduled = .now()
            for timer in handles {
                timer.cancel()
            }
            phaseTimes.cancelled = .now()
            handles.removeAll(keepingCapacity: true)
            nioCallbackHandles.value = handles
            iterationDone.signal()
        }
        iterationDone.wait()
        phaseTimes.report(to: benchmark)
    }

    // MARK: 2. Schedule 100,000 timers with random deadlines within 100 ms and let them all fire

    let firingConfiguration = Benchmark.Configuration(metrics: loopMetrics, setup: prepare)

    Benchmark("Timers: 100k random deadlines <100 ms all fire, EpollLoop", configuration: firingConfiguration) { _ in
        let loop = epollGroup.loops[0]
        try! loop.execute {
            FiredTimers.count = 0
            FiredTimers.target = firingTimerCount
            let now = Deadline.now()
            for delay in firingDelays {
                try! loop.schedule(at: now + .nanoseconds(delay)) { FiredTimers.fire() }
            }
        }
        iterationDone.wait()
    }

    Benchmark("Timers: 100k random deadlines <100 ms all fire, SwiftNIO", configuration: firingConfiguration) { _ in
        let loop = nioLoops[0]
        loop.execute {
            FiredTimers.count = 0
            FiredTimers.target = firingTimerCount
            let now = NIODeadline.now()
            for delay in firingDelays {
                loop.scheduleTask(deadline: now + .nanoseconds(delay)) { FiredTimers.fire() }
            }
        }
        iterationDone.wait()
    }

    // MARK: 3. 1,000,000 execute calls from a thread outside the loop; the last task signals

    let executeConfiguration = Benchmark.Configuration(metrics: loopMetrics, setup: prepare)

    Benchmark("Execute: 1M from another thread, EpollLoop", configuration: executeConfiguration) { _ in
        let loop = epollGroup.loops[0]
        for _ in 1..<executeCount {
            try! loop.execute {}
        }
        try! loop.execute { iterationDone.signal() }
        iterationDone.wait()
    }

    Benchmark("Execute: 1M from another thread, SwiftNIO", configuration: executeConfiguration) { _ in
        let loop = nioLoops[0]
        for _ in 1..<executeCount {
            loop.execute {}
        }
        loop.execute { iterationDone.signal() }
        iterationDone.wait()
    }

    // MARK: 4. Ping-pong between two loops: 100,000 round trips (A executes on B, B executes back on A)

    let pingPongConfiguration = Benchmark.Configuration(metrics: loopMetrics, maxIterations: 5, setup: prepare)

    Benchmark("Ping-pong: 100k round trips between 2 loops, EpollLoop", configuration: pingPongConfiguration) { _ in
        EpollPingPong.remaining = pingPongRoundTrips
        try! EpollPingPong.a.execute { EpollPingPong.ping() }
        iterationDone.wait()
    }

    Benchmark("Ping-pong: 100k round trips between 2 loops, SwiftNIO", configuration: pingPongConfiguration) { _ in
        NIOPingPong.remaining = pingPongRoundTrips
        NIOPingPong.a.execute { NIOPingPong.ping() }
        iterationDone.wait()
    }
}
