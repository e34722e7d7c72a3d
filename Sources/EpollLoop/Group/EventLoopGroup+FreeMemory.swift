import CEpollShim

extension EventLoopGroup {
    /// Gives the memory the program has freed back to the kernel, in the background: every `interval`, on
    /// the group's first loop, when the C allocator holds at least `threshold` bytes the program freed but
    /// malloc kept, it calls `malloc_trim(0)`.
    ///
    /// glibc's malloc returns freed memory to the kernel only from the top of a heap. After a burst (a flood
    /// of large reads, a peer that sends without reading, thousands of connections closing) the freed buffers
    /// lie between live ones, so the process keeps the burst's peak in its RSS, and a later burst of another
    /// shape can raise it a step more. `malloc_trim` also returns the whole free pages inside the heaps, so
    /// RSS comes back down after each burst (the soak in docs/benchmarks.md shows the steps without it). A
    /// check reads `mallinfo2` (microseconds); a trim walks the free chunks and costs an `madvise` per run of
    /// free pages, once per burst at most. It acts on the whole process, so one group is enough; calling it
    /// again replaces the interval and threshold. The example servers turn it on.
    ///
    /// ```swift
    /// let group = try EventLoopGroup()
    /// try group.startReturningFreeMemory()    // every 10 s, when 1 MiB or more lies free
    /// ```
    ///
    /// - Parameters:
    ///   - interval: how often to check (at least the timer wheel's resolution).
    ///   - threshold: the free bytes inside malloc's arenas (`mallinfo2().fordblks`) that make a trim worth it.
    /// - Throws: ``EventLoopError/shutDown`` if the group is shut down.
    public func startReturningFreeMemory(every interval: Duration = .seconds(10),
                                         threshold: Int = 1 << 20) throws(EventLoopError) {
        let generation = freeMemory.withLock { state in
            state.timer?.cancel()
            state.timer = nil
            state.generation &+= 1
            return state.generation
        }
        try scheduleFreeMemoryCheck(generation: generation, interval: interval, threshold: max(0, threshold))
    }

    /// Stops returning free memory. Any thread.
    public func stopReturningFreeMemory() {
        freeMemory.withLock { state in
            state.timer?.cancel()
            state.timer = nil
            state.generation &+= 1
        }
    }

    /// How many checks and trims ``startReturningFreeMemory(every:threshold:)`` has made so far.
    public var freeMemoryReturns: (checks: Int, trims: Int) {
        freeMemory.withLock { ($0.checks, $0.trims) }
    }

    private func scheduleFreeMemoryCheck(generation: UInt64, interval: Duration, threshold: Int) throws(EventLoopError) {
        let timer = try loops[0].schedule(after: interval) { [weak self] in
            guard let self else { return }
            let current = freeMemory.withLock { $0.generation == generation }
            guard current else { return }
            let trim = cepoll_malloc_free_bytes() >= threshold
            if trim { _ = cepoll_malloc_trim() }
            freeMemory.withLock { state in
                state.checks += 1
                if trim { state.trims += 1 }
            }
            try? scheduleFreeMemoryCheck(generation: generation, interval: interval, threshold: threshold)
        }
        freeMemory.withLock { state in
            if state.generation == generation { state.timer = timer } else { timer.cancel() }
        }
    }
}

/// The state of ``EventLoopGroup/startReturningFreeMemory(every:threshold:)``: the pending check, a
/// generation that a start or stop changes (so a check already due from an earlier start does nothing), and
/// the counts.
struct FreeMemoryReturnState {
    var timer: ScheduledTimer?
    var generation: UInt64 = 0
    var checks = 0
    var trims = 0
}
