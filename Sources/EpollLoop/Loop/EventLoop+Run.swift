import CEpollShim
import Glibc

/// One loop iteration is a short sequence of phases, each a function (as in libuv's `uv_run`):
/// compute the poll timeout, poll for I/O and dispatch it, update the time, fire due timers, run tasks.
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
        // Tasks queued before run() are in the shared queue: take them at once.
        collectRemoteTasks()
        while !shutdownRequested {
            runIteration()
        }
        closeDown()
        threadID.store(0, ordering: .releasing)
        finished.leave()
    }

    func runIteration() {
        let timeout = pollTimeout()
        poll(timeoutMilliseconds: timeout)
        // Shutdown requested: closeDown() runs the queued tasks and cancels the timers; none may fire now.
        if shutdownRequested { return }
        now = Deadline.now().uptimeNanoseconds
        runTimers()
        runRemoteTasks()
        runLocalTasks()
        iterations &+= 1
    }

    /// 0 when work is waiting, the time to the next timer (rounded up to whole ms), or -1 to wait indefinitely.
    func pollTimeout() -> Int32 {
        if hasLocalTasks || !remoteBatch.isEmpty { return 0 }
        guard let wakeup = timers.nextWakeup() else { return -1 }
        let current = Deadline.now().uptimeNanoseconds
        guard wakeup > current else { return 0 }
        let millis = (wakeup - current + 999_999) / 1_000_000
        return Int32(clamping: millis)
    }

    /// Waits in `epoll_wait` and dispatches the events, then takes the tasks queued by other threads.
    ///
    /// Before a blocking wait the loop marks itself asleep under the shared mutex, unless tasks are already
    /// queued; producers write the eventfd only while it is asleep, so a busy loop gets no wakeups at all.
    func poll(timeoutMilliseconds: Int32) {
        var timeout = timeoutMilliseconds
        if timeout != 0 {
            let mustNotSleep = remote.withLock { state -> Bool in
                if !state.tasks.isEmpty || state.lifecycle == .shuttingDown { return true }
                state.asleep = true
                return false
            }
            if mustNotSleep { timeout = 0 }
        }
        let count: Int32
        do {
            count = try Syscall.epollWait(epollFD, events, count: eventCapacity, timeoutMilliseconds: timeout)
        } catch {
            precondition(error.errno != .badFileDescriptor && error.errno != .invalidArgument,
                         "event loop '\(name)': epoll_wait on a broken epoll instance: \(error)")
            count = 0  // A transient failure (or an injected one): try again next iteration.
        }
        collectRemoteTasks()
        dispatchEvents(count: Int(count))
    }

    /// Hands each event to its handler; events whose generation no longer matches are stale and dropped.
    ///
    /// Work the handler queued on the loop runs right after it, before the next event: typically the job of
    /// a task its read just resumed, which then writes its reply while that connection's socket, task and
    /// buffers are still in cache. Deferring it to the end of the batch, as the loop first did, cost the
    /// async echo server 22% more user-space CPU per round trip at 1,000 connections (the batch's replies
    /// all allocated before any was freed, and every connection's state reloaded from memory; paired runs
    /// in docs/benchmarks.md). The check after each event is one load when nothing was queued.
    func dispatchEvents(count: Int) {
        for i in 0..<count {
            let data = cepoll_event_data(events, Int32(i))
            if data == Self.wakeupToken {
                try? Syscall.eventfdDrain(wakeFD)
                continue
            }
            let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: data))
            let generation = UInt32(truncatingIfNeeded: data >> 32)
            guard let handler = registrations.handler(fd: fd, generation: generation) else { continue }
            handler.handleIO(IOEvents(rawValue: cepoll_event_bits(events, Int32(i))))
            if !localTasks.isEmpty { runLocalTasks() }
        }
    }

    /// Moves the shared task queue into `remoteBatch` and marks the loop awake.
    func collectRemoteTasks() {
        remote.withLock { state in
            state.asleep = false
            state.wakeupPending = false
            if !state.tasks.isEmpty {
                if remoteBatch.isEmpty {
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
