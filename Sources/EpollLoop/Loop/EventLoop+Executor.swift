/// The loop as a Swift concurrency executor.
///
/// Actors whose `unownedExecutor` is a loop, and tasks started with `Task(executorPreference: loop)`, run
/// their jobs on the loop's thread, interleaved with I/O events and timers in FIFO order with `execute`d
/// closures. A job enqueued from the loop itself costs no lock and no wakeup.
///
/// ```swift
/// actor Connections {
///     let loop: EventLoop
///     nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
///     init(loop: EventLoop) { self.loop = loop }
/// }
/// Task(executorPreference: loop) { /* runs on the loop's thread */ }
/// ```
extension EventLoop: SerialExecutor, TaskExecutor {
    /// Queues a job to run on the loop (dropped if the loop has shut down, as no thread is left to run it).
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if inEventLoop {
            localTasks.append(.job(job))
        } else {
            do {
                try enqueueRemote(.job(job))
            } catch {
                // The loop is gone: no thread will ever run this job. Losing it silently would hang the
                // awaiting task forever, so stop loudly: enqueueing onto a shut-down loop is a programmer error.
                preconditionFailure("event loop '\(name)' is shut down; cannot run a Swift concurrency job on it")
            }
        }
    }

    /// This loop as an unowned serial executor.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// This loop as an unowned task executor.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Stops the process unless called on the loop's thread (backs `assumeIsolated` and `assertIsolated`).
    public func checkIsolated() {
        preconditionInEventLoop()
    }

    /// Whether the current thread is the loop's thread.
    public func isIsolatingCurrentContext() -> Bool? {
        inEventLoop
    }

    /// Whether two executors are the same loop.
    public func isSameExclusiveExecutionContext(other: EventLoop) -> Bool {
        self === other
    }
}
