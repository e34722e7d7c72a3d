import Glibc
import Synchronization

/// Where a loop publishes its counters for other threads: relaxed atomics behind a sequence lock.
///
/// Only the loop's thread writes (``write(_:iterations:descriptors:)``, once or twice per iteration); any thread reads (``read(loop:)``)
/// without ever blocking the loop. The writer makes the sequence odd, stores the fields, and makes it even
/// again; a reader that saw the same even sequence before and after its loads has a consistent copy, and
/// otherwise retries. On x86-64 every operation here is a plain load or store: the fences only stop the
/// compiler from reordering. The fields are atomics (not plain memory behind the lock) so that a read racing
/// a write is defined behaviour, and ThreadSanitizer agrees.
final class LoopMetricsCell: Sendable {
    private let sequence = Atomic<UInt64>(0)
    private let iterations = Atomic<UInt64>(0)
    private let events = Atomic<UInt64>(0)
    private let tasks = Atomic<UInt64>(0)
    private let timers = Atomic<UInt64>(0)
    private let descriptors = Atomic<UInt64>(0)
    private let busy = Atomic<UInt64>(0)
    private let wait = Atomic<UInt64>(0)
    /// The clock reading up to which `busy` and `wait` account for the loop's time.
    private let accountedUntil = Atomic<UInt64>(0)
    /// 1 while the loop waits in `epoll_wait` (the time since `accountedUntil` is waiting), else 0.
    private let waiting = Atomic<UInt64>(0)
    private let stalls = Atomic<UInt64>(0)
    private let lagCount = Atomic<UInt64>(0)
    private let lagSum = Atomic<UInt64>(0)
    private let lagMax = Atomic<UInt64>(0)
    private let lagBuckets: InlineArray<304, Atomic<UInt64>> = InlineArray { _ in Atomic(0) }

    init() {
        precondition(LagHistogram.bucketCount == 304, "lagBuckets must have LagHistogram.bucketCount elements")
    }

    /// Publishes `counters` (loop thread only), folding in the lag samples they hold.
    @inline(__always)
    func write(_ counters: borrowing LoopCounters, iterations iterationCount: UInt64, descriptors descriptorCount: Int) {
        let next = counters.publications &* 2
        sequence.store(next &+ 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        iterations.store(iterationCount, ordering: .relaxed)
        events.store(counters.events, ordering: .relaxed)
        tasks.store(counters.tasks, ordering: .relaxed)
        timers.store(counters.timers, ordering: .relaxed)
        descriptors.store(UInt64(descriptorCount), ordering: .relaxed)
        busy.store(counters.busy, ordering: .relaxed)
        wait.store(counters.wait, ordering: .relaxed)
        accountedUntil.store(counters.lastMark, ordering: .relaxed)
        waiting.store(counters.waiting ? 1 : 0, ordering: .relaxed)
        stalls.store(counters.stalls, ordering: .relaxed)
        if counters.pendingLagCount > 0 {
            record(counters.pendingLag.0)
            if counters.pendingLagCount > 1 { record(counters.pendingLag.1) }
        }
        sequence.store(next &+ 2, ordering: .releasing)
    }

    /// Adds one lag sample; only inside ``write(_:iterations:descriptors:)`` (single writer: load and store).
    private func record(_ nanoseconds: UInt64) {
        let index = LagHistogram.bucket(of: nanoseconds)
        lagBuckets[index].store(lagBuckets[index].load(ordering: .relaxed) &+ 1, ordering: .relaxed)
        lagCount.store(lagCount.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
        lagSum.store(lagSum.load(ordering: .relaxed) &+ nanoseconds, ordering: .relaxed)
        if nanoseconds > lagMax.load(ordering: .relaxed) { lagMax.store(nanoseconds, ordering: .relaxed) }
    }

    /// A consistent copy, from any thread. Time since the loop last published counts as waiting if it was
    /// then about to wait, else as busy (so a loop asleep, or stuck in one long callback, reads as such now).
    func read(loop name: String, now: UInt64) -> LoopMetrics {
        var spins = 0
        while true {
            let before = sequence.load(ordering: .acquiring)
            var m = LoopMetrics(loop: name)
            m.iterations = iterations.load(ordering: .relaxed)
            m.events = events.load(ordering: .relaxed)
            m.tasks = tasks.load(ordering: .relaxed)
            m.timers = timers.load(ordering: .relaxed)
            m.registeredDescriptors = Int(descriptors.load(ordering: .relaxed))
            m.busyNanoseconds = busy.load(ordering: .relaxed)
            m.waitNanoseconds = wait.load(ordering: .relaxed)
            let until = accountedUntil.load(ordering: .relaxed)
            let isWaiting = waiting.load(ordering: .relaxed) != 0
            m.stalls = stalls.load(ordering: .relaxed)
            m.lag.count = lagCount.load(ordering: .relaxed)
            m.lag.sumNanoseconds = lagSum.load(ordering: .relaxed)
            m.lag.maxNanoseconds = lagMax.load(ordering: .relaxed)
            for index in 0..<LagHistogram.bucketCount { m.lag.buckets[index] = lagBuckets[index].load(ordering: .relaxed) }
            atomicMemoryFence(ordering: .acquiring)
            let after = sequence.load(ordering: .relaxed)
            if before == after && before & 1 == 0 {
                if until != 0 && now > until {
                    if isWaiting { m.waitNanoseconds &+= now - until } else { m.busyNanoseconds &+= now - until }
                }
                return m
            }
            // The loop is mid-write (a few dozen instructions) or was preempted there: let it finish.
            spins += 1
            if spins % 64 == 0 { sched_yield() }
        }
    }
}
