extension EventLoop {
    /// Runs `task` on the loop, after the tasks queued before it, from any thread.
    ///
    /// Called on the loop, the task is appended to a loop-local queue (no lock, no wakeup) and runs in the
    /// next iteration. Called elsewhere, it goes into the shared queue under a mutex and the loop is woken
    /// through its eventfd only if it is asleep and nobody has woken it yet: at most one wakeup per iteration.
    ///
    /// `file` and `line` name the task in stall reports (kept only while the stall detector is on).
    ///
    /// - Throws: ``EventLoopError/shutDown`` once the loop has shut down (from other threads: once shutdown
    ///   has begun); the task is not run.
    public func execute(_ task: @escaping @Sendable () -> Void,
                        file: StaticString = #fileID, line: UInt = #line) throws(EventLoopError) {
        let task = traced(task, file: file, line: line)
        if inEventLoop {
            localTasks.append(.task(task))
            return
        }
        try enqueueRemote(.task(task))
    }

    /// Appends work to the shared queue and wakes the loop if it sleeps and nobody has woken it yet.
    func enqueueRemote(_ work: LoopWork) throws(EventLoopError) {
        let mustWake = try remote.withLock { state throws(EventLoopError) -> Bool in
            switch state.lifecycle {
            case .shuttingDown, .shutDown: throw .shutDown
            case .idle, .running: break
            }
            if state.tasks.isEmpty { state.oldestQueuedAt = Deadline.now().uptimeNanoseconds }
            state.tasks.append(work)
            guard state.asleep && !state.wakeupPending else { return false }
            state.wakeupPending = true
            wakeWriters.add(1, ordering: .relaxed)
            return true
        }
        // Written after unlocking: the woken loop takes this lock at once, and would otherwise block on it
        // while we are still in write(). `wakeWriters` (raised under the lock) keeps the loop from closing
        // the eventfd until this write is done, so it never hits a closed or reused descriptor.
        if mustWake {
            wakeUp()
            wakeWriters.subtract(1, ordering: .releasing)
        }
    }

    /// Queues a task from the loop itself; it need not be `Sendable` since it never leaves the thread.
    package func executeOnLoop(_ task: @escaping () -> Void, file: StaticString = #fileID, line: UInt = #line) {
        preconditionInEventLoop()
        localTasks.append(.task(tracedOnLoop(task, file: file, line: line)))
    }

    /// Writes the eventfd. A failure here would leave the loop asleep with work queued, so it is fatal.
    func wakeUp() {
        do {
            try Syscall.eventfdSignal(wakeFD)
        } catch {
            preconditionFailure("event loop '\(name)': cannot write its wakeup eventfd: \(error)")
        }
    }

    /// Whether tasks are waiting that the loop should run before it sleeps.
    var hasLocalTasks: Bool { !localTasks.isEmpty }

    /// Runs the tasks that were queued on the loop before this call; those they queue run next iteration.
    func runLocalTasks() {
        guard !localTasks.isEmpty else { return }
        swap(&localTasks, &spareTasks)
        counters.tasks &+= UInt64(spareTasks.count)
        if stallThresholdNanoseconds != 0 {
            runTimed(spareTasks)
        } else {
            for work in spareTasks { work.run(on: self) }
        }
        // Emptied from the end, keeping the capacity: `removeAll(keepingCapacity:)` goes through the generic
        // `replaceSubrange`, about 75 instructions even for the single job that a resumed task usually is.
        while spareTasks.popLast() != nil {}
    }

    /// Runs the tasks taken from the shared queue at the last wakeup (their lag is noted by
    /// ``noteRemoteLag()``, once the iteration has read the clock).
    func runRemoteTasks() {
        guard !remoteBatch.isEmpty else { return }
        counters.tasks &+= UInt64(remoteBatch.count)
        if stallThresholdNanoseconds != 0 {
            runTimed(remoteBatch)
        } else {
            for work in remoteBatch { work.run(on: self) }
        }
        remoteBatch.removeAll(keepingCapacity: true)
    }

    /// The lag of the batch from other threads that ran this iteration, as one sample: how long its oldest
    /// task waited, against the iteration's clock reading (the end of a blocking wait, or the reading after
    /// the dispatch), so without a reading of its own. The batch runs before the dispatch, which has not
    /// read the clock yet when the poll did not block.
    func noteRemoteLag() {
        let queuedAt = counters.remoteBatchQueuedAt
        guard queuedAt != 0 else { return }
        counters.remoteBatchQueuedAt = 0
        counters.noteLag(now > queuedAt ? now - queuedAt : 0)
    }
}

/// One unit of queued work: a closure, or a Swift concurrency job (enqueued without wrapping it in a closure,
/// so running an async task's job on the loop allocates nothing here). One queue for both keeps them in order.
///
/// `@unchecked Sendable`: work put in the shared queue by other threads holds `@Sendable` closures only;
/// work in the loop-local queue never leaves the loop's thread.
enum LoopWork: @unchecked Sendable {
    case task(() -> Void)
    /// A job sent to the loop as a serial executor (an actor's).
    case job(UnownedJob)
    /// A job sent to the loop as a task executor (a task preferring the loop, in nonisolated code).
    case taskJob(UnownedJob)

    @inline(__always)
    func run(on loop: EventLoop) {
        switch self {
        case .task(let task):
            task()
        case .job(let job):
            loop.jobsRun &+= 1
            job.runSynchronously(isolatedTo: loop.asUnownedSerialExecutor(), taskExecutor: loop.asUnownedTaskExecutor())
        case .taskJob(let job):
            loop.jobsRun &+= 1
            job.runSynchronously(on: loop.asUnownedTaskExecutor())
        }
    }
}
