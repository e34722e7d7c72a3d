import Dispatch
import Glibc

extension EventLoop {
    /// Asks the loop to shut down and returns at once; callable from any thread, including the loop's.
    ///
    /// The loop finishes its current iteration, runs the tasks already queued, cancels its timers, lets each
    /// registered handler close down (``IOEventHandler/loopWillShutDown()``), closes every descriptor still
    /// registered exactly once, and then ``run()`` returns. A loop that never ran is closed down here.
    public func initiateShutdown() {
        enum Action { case closeHere, wake, nothing }
        let action = remote.withLock { state -> Action in
            switch state.lifecycle {
            case .idle:
                state.lifecycle = .shutDown
                return .closeHere
            case .running:
                state.lifecycle = .shuttingDown
                guard !state.wakeupPending else { return .nothing }
                state.wakeupPending = true
                if !inEventLoop { wakeWriters.add(1, ordering: .relaxed) }
                return .wake
            case .shuttingDown, .shutDown:
                return .nothing
            }
        }
        switch action {
        case .closeHere:
            // Never ran: nobody else is on the loop, so this thread acts as the loop thread while it closes.
            threadID.store(UInt(pthread_self()), ordering: .releasing)
            shutdownRequested = true
            closeDown()
            threadID.store(0, ordering: .releasing)
            finished.leave()
        case .wake:
            // On the loop itself no write is needed: it checks the lifecycle before it next sleeps.
            if !inEventLoop {
                wakeUp()
                wakeWriters.subtract(1, ordering: .releasing)
            }
        case .nothing:
            break
        }
        // On the loop the request is noted at once: a task that runs before the timers (one from another
        // thread, taken with the poll) then ends the iteration there, and no timer fires after the request.
        if inEventLoop { shutdownRequested = true }
    }

    /// Shuts the loop down and waits until it has finished (see ``initiateShutdown()``).
    ///
    /// - Throws: ``EventLoopError/calledOnLoop`` on the loop's own thread (use ``initiateShutdown()`` there),
    ///   ``EventLoopError/shutdownTimedOut`` if the loop has not finished within `timeout`.
    public func shutdownGracefully(timeout: Duration = .seconds(30)) throws(EventLoopError) {
        guard !inEventLoop else { throw .calledOnLoop }
        initiateShutdown()
        try awaitTermination(timeout: timeout)
    }

    /// Waits until the loop has shut down.
    func awaitTermination(timeout: Duration) throws(EventLoopError) {
        let nanos = max(0, timeout.nanoseconds)
        if finished.wait(timeout: DispatchTime.now() + .nanoseconds(Int(clamping: nanos))) == .timedOut {
            throw .shutdownTimedOut
        }
    }

    /// Whether the loop has shut down (or is shutting down). Any thread.
    public var isShutDown: Bool {
        remote.withLock { state in
            switch state.lifecycle {
            case .idle, .running: return false
            case .shuttingDown, .shutDown: return true
            }
        }
    }

    /// Whether new registrations must be refused (the loop is closing down). Loop only.
    var isShutDownOnLoop: Bool { shutdownRequested }

    /// The end of the loop's life, on its thread: drain work, cancel timers, close every descriptor once.
    func closeDown() {
        drainTasks()
        timers.removeAll()
        for fd in registrations.registeredDescriptors {
            guard let handler = registrations.handler(fd: fd, generation: registrations.generation(of: fd)) else {
                continue
            }
            handler.loopWillShutDown()
        }
        drainTasks()
        // Whatever the handlers left registered, the loop closes (each exactly once: close() unregisters).
        for fd in registrations.registeredDescriptors {
            try? close(fd: fd)
        }
        // From here on, other threads' tasks are refused; run what was accepted before.
        remote.withLock { state in
            state.lifecycle = .shutDown
        }
        collectRemoteTasks()
        drainTasks()
        timers.removeAll()
        counters.waiting = false
        publishMetrics()
        // No thread can start a wakeup now (the lifecycle is shutDown); wait out one already in write().
        while wakeWriters.load(ordering: .acquiring) > 0 { sched_yield() }
        try? Syscall.close(wakeFD)
        try? Syscall.close(epollFD)
    }

    /// Runs queued tasks until none are left (bounded, so a task that keeps re-queueing itself cannot hang shutdown).
    private func drainTasks() {
        for _ in 0..<1024 {
            collectRemoteTasks()
            if remoteBatch.isEmpty && localTasks.isEmpty { return }
            runRemoteTasks()
            runLocalTasks()
        }
    }
}
