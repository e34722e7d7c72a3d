import CEpollShim
import Glibc

/// One loop iteration is a short sequence of phases, each a function (as in libuv's `uv_run`): compute the
/// poll timeout, poll for I/O, run the tasks other threads queued, dispatch the I/O, update the time, fire
/// due timers, run the loop's own tasks.
///
/// The tasks from other threads run between the poll and its dispatch so that a call made off the loop
/// happens before any event that occurred after it: a receive filter set from another thread is in place
/// for a datagram sent after the call, as on a GCD socket queue, whose blocks run in the order submitted.
/// Every task queued before `epoll_wait` returned is in the batch (it is taken once the wait is over);
/// tasks the batch or the handlers queue on the loop itself run after it as before.
extension EventLoop {
    /// Runs the loop on the calling thread until it has shut down.
    ///
    /// - Throws: ``EventLoopError/alreadyRunning`` if the loop is running or has run,
    ///   ``EventLoopError/shutDown`` if it was shut down before it ever ran.
    public func run() throws(EventLoopError) {
        try remote.withLock { state throws(EventLoopError) in
            switch state.lifecycle {
            case .idle:
                state.lifecycle = .running
                state.hasRun = true
            case .running, .shuttingDown: throw .alreadyRunning
            case .shutDown: throw state.hasRun ? .alreadyRunning : .shutDown
            }
        }
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        setCurrent(true)
        counters.lastMark = Deadline.now().uptimeNanoseconds
        // Tasks queued before run() are in the shared queue: take them at once.
        collectRemoteTasks()
        while !shutdownRequested {
            runIteration()
        }
        closeDown()
        setCurrent(false)
        threadID.store(0, ordering: .releasing)
        finished.leave()
    }

    func runIteration() {
        var slept = false
        if counters.polledEvents == eventCapacity {
            // The last poll filled the event array, so more was ready than it took: poll without blocking
            // first, and block only if that finds nothing and brings no work. A loaded loop then reads the
            // clock once per iteration (below, after dispatching) and never marks itself asleep, where a
            // blocking poll costs a clock reading on each side of it, the asleep mark under the mutex and a
            // second publication of the counters, even when it returns at once. Polling first after any
            // smaller batch would pay an epoll_wait each time it finds nothing, as it mostly does on a lightly
            // loaded loop (a client, a server with few connections: one wakeup, one event), to save those
            // ~160 instructions when it does find something; a loaded server's batches are large enough
            // that the saving per event is lost in the noise.
            counters.timerWakeup = 0  // runTimers finds the due time itself, unless pollTimeout() below keeps it
            _ = poll(timeoutMilliseconds: 0)
            // A batch from other threads ran (its lag not noted yet): it may have left work; do not block.
            if counters.polledEvents == 0 && !hasLocalTasks && counters.remoteBatchQueuedAt == 0 && !shutdownRequested {
                let timeout = pollTimeout()
                if timeout != 0 { slept = poll(timeoutMilliseconds: timeout) }
            }
        } else {
            slept = poll(timeoutMilliseconds: pollTimeout())
        }
        // Shutdown requested: closeDown() runs the queued tasks and cancels the timers; none may fire now.
        if shutdownRequested { return }
        // After a blocking wait `now` was read as it returned; otherwise this is the iteration's one reading.
        if !slept {
            now = Deadline.now().uptimeNanoseconds
            counters.busy &+= now &- counters.lastMark
            counters.lastMark = now
        }
        runTimers()
        noteRemoteLag()
        runLocalTasks()
        iterations &+= 1
    }

    /// 0 when work is waiting, the time to the next timer (rounded up to whole ms), or -1 to wait indefinitely.
    /// When it reads the clock for a timer it keeps the reading, for timing the wait that follows, and the
    /// wheel's wakeup, for the timers' lag.
    func pollTimeout() -> Int32 {
        counters.timerWakeup = 0
        counters.pollClock = 0
        if hasLocalTasks || !remoteBatch.isEmpty { return 0 }
        guard let wakeup = timers.nextWakeup() else { return -1 }
        counters.timerWakeup = wakeup
        // Due by the iteration's own reading already: no need for another.
        if wakeup <= now { return 0 }
        let current = Deadline.now().uptimeNanoseconds
        guard wakeup > current else { return 0 }
        counters.pollClock = current
        let millis = (wakeup - current + 999_999) / 1_000_000
        return Int32(clamping: millis)
    }

    /// Waits in `epoll_wait`, takes and runs the tasks queued by other threads, then dispatches the events.
    /// Returns whether it could block (then `now` is the time the wait ended).
    ///
    /// Before a blocking wait the loop marks itself asleep under the shared mutex, unless tasks are already
    /// queued; producers write the eventfd only while it is asleep, so a busy loop gets no wakeups at all.
    /// The loop's counters are published here, before each poll, and once more after a blocking wait; a
    /// blocking wait is timed by a clock reading on each side of it (the one before reused from
    /// ``pollTimeout()`` when it read one). ``runIteration()`` polls without blocking first only after a
    /// full batch, so only a loop whose batches fill its event array skips them; any other wakeup pays them
    /// once, beside its single `epoll_wait`.
    func poll(timeoutMilliseconds: Int32) -> Bool {
        var timeout = timeoutMilliseconds
        if timeout != 0 {
            let mustNotSleep = remote.withLock { state -> Bool in
                if !state.tasks.isEmpty || state.lifecycle == .shuttingDown { return true }
                state.asleep = true
                return false
            }
            if mustNotSleep { timeout = 0 }
        }
        let blocking = timeout != 0
        if blocking {
            let start = counters.pollClock != 0 ? counters.pollClock : Deadline.now().uptimeNanoseconds
            counters.busy &+= start &- counters.lastMark
            counters.lastMark = start
        }
        counters.waiting = blocking
        publishMetrics()
        let count: Int32
        do {
            count = try Syscall.epollWait(epollFD, events, count: eventCapacity, timeoutMilliseconds: timeout)
        } catch {
            precondition(error.errno != .badFileDescriptor && error.errno != .invalidArgument,
                         "event loop '\(name)': epoll_wait on a broken epoll instance: \(error)")
            count = 0  // A transient failure (or an injected one): try again next iteration.
        }
        if blocking {
            now = Deadline.now().uptimeNanoseconds
            counters.wait &+= now &- counters.lastMark
            counters.lastMark = now
            counters.waiting = false
            // Published at once, or a reader would count the work this wakeup brings as waiting until the
            // next iteration's publication; a loop that slept can afford the dozen stores.
            publishMetrics()
        }
        // Taken after the wait returned, so every task queued before it returned is in the batch: the
        // calls other threads made before these events occurred take effect before the events are handled.
        // What the batch queues on the loop (a pump, a resumed job) runs with it, before the events too.
        collectRemoteTasks()
        if !remoteBatch.isEmpty {
            runRemoteTasks()
            runLocalTasks()
        }
        counters.events &+= UInt64(count)
        counters.polledEvents = count
        counters.polls &+= 1
        dispatchEvents(count: Int(count))
        return blocking
    }

    /// Hands each event to its handler; events whose generation no longer matches are stale and dropped.
    ///
    /// Work the handler queued on the loop runs right after it, before the next event: typically the job of
    /// a task its read just resumed, which then writes its reply while that connection's socket, task and
    /// buffers are still in cache. Deferring it to the end of the batch, as the loop first did, cost the
    /// async echo server 22% more user-space CPU per round trip at 1,000 connections (the batch's replies
    /// all allocated before any was freed, and every connection's state reloaded from memory; paired runs
    /// in docs/benchmarks.md). The check after each event is one load when nothing was queued.
    ///
    /// A handler is called without a retain (``RegistrationTable/dispatchTarget(fd:generation:)``): the table
    /// keeps the handlers it drops during the batch, and they are released after the call that dropped them.
    func dispatchEvents(count: Int) {
        registrations.isDispatching = true
        // Two copies of the loop, chosen once per batch: the stall detector costs nothing per event when off.
        if stallThresholdNanoseconds != 0 {
            dispatchEvents(count: count, timed: true)
        } else {
            dispatchEvents(count: count, timed: false)
        }
        registrations.isDispatching = false
        if registrations.hasRetired { releaseRetiredHandlers() }
    }

    @inline(__always)
    private func dispatchEvents(count: Int, timed: Bool) {
        for i in 0..<count {
            let data = cepoll_event_data(events, Int32(i))
            if data == Self.wakeupToken {
                try? Syscall.eventfdDrain(wakeFD)
                continue
            }
            let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: data))
            let generation = UInt32(truncatingIfNeeded: data >> 32)
            guard let target = registrations.dispatchTarget(fd: fd, generation: generation) else { continue }
            let events = IOEvents(rawValue: cepoll_event_bits(events, Int32(i)))
            if timed {
                let start = Deadline.now().uptimeNanoseconds
                target.type.handleIO(unretained: target.object, events)
                checkStall(since: start, .ioHandler, subject: Self.typeName(of: target))
            } else {
                target.type.handleIO(unretained: target.object, events)
            }
            if registrations.hasRetired { releaseRetiredHandlers() }
            if !localTasks.isEmpty { runLocalTasks() }
        }
    }

    /// Releases the handlers the table dropped while dispatching. A handler's deinit may drop more (a socket
    /// closing a descriptor it owns): those are released too, before this returns.
    @inline(never)
    func releaseRetiredHandlers() {
        repeat {
            // Moved out of the table first: the releases run deinits, which may drop more handlers into it.
            let first = registrations.retired.take()
            if !registrations.moreRetired.isEmpty {
                swap(&releasing, &registrations.moreRetired)
                releasing.removeAll(keepingCapacity: true)
            }
            _ = consume first
        } while registrations.hasRetired
    }

    /// Moves the shared task queue into `remoteBatch` and marks the loop awake.
    func collectRemoteTasks() {
        remote.withLock { state in
            state.asleep = false
            state.wakeupPending = false
            if !state.tasks.isEmpty {
                if remoteBatch.isEmpty {
                    counters.remoteBatchQueuedAt = state.oldestQueuedAt
                    swap(&state.tasks, &remoteBatch)
                } else {
                    remoteBatch.append(contentsOf: state.tasks)
                    state.tasks.removeAll(keepingCapacity: true)
                }
            }
            if state.lifecycle == .shuttingDown { shutdownRequested = true }
        }
    }
}
