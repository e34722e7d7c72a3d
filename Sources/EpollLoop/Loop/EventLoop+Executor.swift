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
///
/// Two roles, two objects. `SerialExecutor` and `TaskExecutor` share one `enqueue` requirement, so one object
/// cannot tell whether a job came to it as an actor's executor or as a task's preferred executor, and the two
/// must run differently: an actor's job with the loop as its current serial executor, a nonisolated task's
/// job with none. (Run as isolated to the loop, a nonisolated task makes the runtime switch executors after
/// every `await`, which re-enqueues it: profiled, a second job per resumption and a third of the async echo
/// server's user-space time.) So the loop itself is the task executor, and `asUnownedSerialExecutor()` names
/// a companion object, ``LoopSerialExecutor``, whose own `enqueue` receives the actors' jobs. It is not the
/// other way round because the runtime releases a task's preferred executor by the identity that
/// `asUnownedTaskExecutor()` returns, after retaining the executor it was given.
extension EventLoop: SerialExecutor, TaskExecutor {
    /// Queues a job of a task that prefers this loop; it runs on the loop's thread as nonisolated work.
    /// (Dropped only by stopping the process if the loop has shut down, as no thread is left to run it.)
    public func enqueue(_ job: consuming ExecutorJob) {
        enqueueJob(.taskJob(UnownedJob(job)))
    }

    func enqueueJob(_ work: LoopWork) {
        if inEventLoop {
            localTasks.append(work)
        } else {
            do {
                try enqueueRemote(work)
            } catch {
                // The loop is gone: no thread will ever run this job. Losing it silently would hang the
                // awaiting task forever, so stop loudly: enqueueing onto a shut-down loop is a programmer error.
                preconditionFailure("event loop '\(name)' is shut down; cannot run a Swift concurrency job on it")
            }
        }
    }

    /// This loop as an unowned serial executor, for actors: it names the loop's `LoopSerialExecutor`,
    /// which the loop keeps alive. Use this in an actor's `unownedExecutor`, not
    /// `UnownedSerialExecutor(ordinary: loop)`: the latter still runs the actor on the loop's thread, but its
    /// jobs arrive as a task executor's, so every switch back to the actor costs another trip through the
    /// loop's queue.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: serialExecutor)
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

/// The loop's face as a `SerialExecutor`: actors isolated to a loop send their jobs here, and they run on
/// the loop's thread with this executor as their current one. One per loop, owned by it.
final class LoopSerialExecutor: SerialExecutor, @unchecked Sendable {
    /// The loop whose thread runs the jobs.
    unowned let loop: EventLoop

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// Queues an actor's job on the loop.
    func enqueue(_ job: consuming ExecutorJob) {
        loop.enqueueJob(.job(UnownedJob(job)))
    }

    /// This executor, unowned.
    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Stops the process unless called on the loop's thread.
    func checkIsolated() {
        loop.preconditionInEventLoop()
    }

    /// Whether the current thread is the loop's thread.
    func isIsolatingCurrentContext() -> Bool? {
        loop.inEventLoop
    }
}
