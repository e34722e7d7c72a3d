import Benchmark
import Dispatch
import EpollLoop
import Glibc
import NIOCore
import NIOPosix

// MARK: Sizes (the same for both libraries)

/// Timers scheduled and then cancelled in the schedule/cancel benchmark.
let cancelledTimerCount = 1_000_000
/// Timers scheduled with random deadlines that all fire.
let firingTimerCount = 100_000
/// Deadlines of the firing timers lie within this many nanoseconds of the moment they are scheduled.
let firingWindowNanoseconds: UInt64 = 100_000_000
/// Tasks handed to a loop from another thread.
let executeCount = 1_000_000
/// Round trips between two loops.
let pingPongRoundTrips = 100_000

// MARK: The loops under test (made once, on first use; idle loops sleep in epoll_wait)

/// Two EpollLoop loops; the single-loop benchmarks use the first.
let epollGroup: EpollLoop.EventLoopGroup = {
    do {
        return try EpollLoop.EventLoopGroup(numberOfLoops: 2, name: "bench-epoll")
    } catch {
        fatalError("cannot start the EpollLoop group: \(error)")
    }
}()

/// Two SwiftNIO loops (`MultiThreadedEventLoopGroup`); the single-loop benchmarks use the first.
let nioGroup = MultiThreadedEventLoopGroup(numberOfThreads: 2)
let nioLoops: [any NIOCore.EventLoop] = Array(nioGroup.makeIterator())

// MARK: Helpers

/// `CLOCK_MONOTONIC` in nanoseconds (vDSO, no system call).
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// SplitMix64: a small deterministic generator, so both libraries get the same deadlines every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The firing timers' delays in nanoseconds, in [0, 100 ms), from a fixed seed; computed once, outside any
/// measurement, so neither library pays for the generator.
let firingDelays: [Int64] = {
    var rng = SplitMix64(seed: 0x00E9_0110_0B5E_ED00)
    return (0..<firingTimerCount).map { _ in Int64(rng.next() % firingWindowNanoseconds) }
}()

/// A value touched only on one loop's thread; carried into the task that uses it.
final class LoopConfined<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

extension LoopConfined where Value: RangeReplaceableCollection {
    /// Moves the collection out (leaving an empty one); put it back with `value = ...`.
    func take() -> Value {
        var taken = Value()
        swap(&taken, &value)
        return taken
    }
}

/// Handle storage for the schedule/cancel benchmark, allocated once so that no iteration pays for it.
let epollTimerHandles: LoopConfined<[ScheduledTimer]> = {
    var handles: [ScheduledTimer] = []
    handles.reserveCapacity(cancelledTimerCount)
    return LoopConfined(handles)
}()

let nioTimerHandles: LoopConfined<[Scheduled<Void>]> = {
    var handles: [Scheduled<Void>] = []
    handles.reserveCapacity(cancelledTimerCount)
    return LoopConfined(handles)
}()

let nioCallbackHandles: LoopConfined<[NIOScheduledCallback]> = {
    var handles: [NIOScheduledCallback] = []
    handles.reserveCapacity(cancelledTimerCount)
    return LoopConfined(handles)
}()

/// CPU time consumed by the calling thread, in nanoseconds: unlike wall time it does not count the time the
/// thread spent preempted, which matters on a shared 2-core machine.
@inline(__always)
func threadCPUNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Wall and loop-thread CPU time, read together.
struct PhaseClock {
    var wall: UInt64
    var cpu: UInt64

    static func now() -> PhaseClock { PhaseClock(wall: monotonicNanoseconds(), cpu: threadCPUNanoseconds()) }
}

/// The time each phase of one schedule/cancel iteration took on the loop.
final class PhaseTimes: @unchecked Sendable {
    var start = PhaseClock(wall: 0, cpu: 0)
    var scheduled = PhaseClock(wall: 0, cpu: 0)
    var cancelled = PhaseClock(wall: 0, cpu: 0)

    /// Reports the four per-timer custom metrics of the iteration just finished.
    func report(to benchmark: Benchmark) {
        benchmark.measurement(TimerMetric.scheduleWall, picosecondsPerTimer(scheduled.wall - start.wall))
        benchmark.measurement(TimerMetric.cancelWall, picosecondsPerTimer(cancelled.wall - scheduled.wall))
        benchmark.measurement(TimerMetric.scheduleCPU, picosecondsPerTimer(scheduled.cpu - start.cpu))
        benchmark.measurement(TimerMetric.cancelCPU, picosecondsPerTimer(cancelled.cpu - scheduled.cpu))
    }
}

let phaseTimes = PhaseTimes()
/// Signalled by the loop when an iteration's work is done; the benchmark thread waits on it.
let iterationDone = DispatchSemaphore(value: 0)

/// A scheduled-callback handler that does nothing: SwiftNIO's allocation-light timer API.
struct NoopCallback: NIOScheduledCallbackHandler, Sendable {
    func handleScheduledCallback(eventLoop: some NIOCore.EventLoop) {}
}

/// Counts firing timers on the loop they fire on (one loop at a time uses it) and signals the last one.
enum FiredTimers {
    nonisolated(unsafe) static var count = 0
    nonisolated(unsafe) static var target = 0

    static func fire() {
        count += 1
        if count == target { iterationDone.signal() }
    }
}

/// Two loops handing one task back and forth; every hop goes through the other loop's remote queue.
enum EpollPingPong {
    nonisolated(unsafe) static var remaining = 0

    static var a: EpollLoop.EventLoop { epollGroup.loops[0] }
    static var b: EpollLoop.EventLoop { epollGroup.loops[1] }

    /// On loop A.
    static func ping() {
        if remaining == 0 {
            iterationDone.signal()
            return
        }
        remaining -= 1
        try! b.execute { EpollPingPong.pong() }
    }

    /// On loop B.
    static func pong() {
        try! a.execute { EpollPingPong.ping() }
    }
}

enum NIOPingPong {
    nonisolated(unsafe) static var remaining = 0

    static var a: any NIOCore.EventLoop { nioLoops[0] }
    static var b: any NIOCore.EventLoop { nioLoops[1] }

    static func ping() {
        if remaining == 0 {
            iterationDone.signal()
            return
        }
        remaining -= 1
        b.execute { NIOPingPong.pong() }
    }

    static func pong() {
        a.execute { NIOPingPong.ping() }
    }
}

// MARK: Metrics

/// Per-phase times of the schedule/cancel benchmark, in picoseconds per timer (1 ns = 1000 ps), so that
/// sub-nanosecond differences survive the integer metric: wall time, and CPU time of the loop thread.
enum TimerMetric {
    static var scheduleWall: BenchmarkMetric {
        .custom("schedule wall ps/timer", polarity: .prefersSmaller, useScalingFactor: false)
    }
    static var cancelWall: BenchmarkMetric {
        .custom("cancel wall ps/timer", polarity: .prefersSmaller, useScalingFactor: false)
    }
    static var scheduleCPU: BenchmarkMetric {
        .custom("schedule CPU ps/timer", polarity: .prefersSmaller, useScalingFactor: false)
    }
    static var cancelCPU: BenchmarkMetric {
        .custom("cancel CPU ps/timer", polarity: .prefersSmaller, useScalingFactor: false)
    }
    static var all: [BenchmarkMetric] { [scheduleWall, cancelWall, scheduleCPU, cancelCPU] }
}

func picosecondsPerTimer(_ nanoseconds: UInt64) -> Int {
    Int(nanoseconds * 1000 / UInt64(cancelledTimerCount))
}
