/// A timer scheduled on an ``EventLoop``; cancel it from any thread.
///
/// Small and cheap: a loop reference and an 8-byte slab ID. ``cancel()`` is O(1) and harmless when repeated
/// or when the timer has already fired.
public struct ScheduledTimer: Sendable {
    /// The loop the timer runs on.
    public let loop: EventLoop
    let id: TimerID
    let remote: RemoteTimer?

    /// Cancels the timer if it has not fired yet. Safe to call any number of times, from any thread.
    ///
    /// On the loop the timer is removed at once; elsewhere the cancellation is queued to the loop, so a timer
    /// already due may still fire before it is processed.
    public func cancel() {
        if loop.inEventLoop {
            if let remote { remote.cancelOnLoop(loop) } else { loop.timers.cancel(id) }
            return
        }
        let id = self.id
        let remote = self.remote
        let loop = self.loop
        try? loop.execute {
            if let remote { remote.cancelOnLoop(loop) } else { loop.timers.cancel(id) }
        }
    }
}

/// The loop-side record of a timer scheduled from another thread, before its slab ID exists.
///
/// Touched only on the loop: the task that files the timer and any task that cancels it are queued in order.
final class RemoteTimer: @unchecked Sendable {
    var id: TimerID?
    var cancelled = false

    func cancelOnLoop(_ loop: EventLoop) {
        cancelled = true
        if let id { loop.timers.cancel(id) }
    }
}

extension EventLoop {
    /// Runs `task` on the loop at `deadline` (never earlier; timers due together fire in deadline order).
    ///
    /// `file` and `line` name the timer in stall reports (kept only while the stall detector is on).
    ///
    /// - Throws: ``EventLoopError/shutDown`` if the loop is shut down.
    @discardableResult
    public func schedule(at deadline: Deadline, _ task: @escaping @Sendable () -> Void,
                         file: StaticString = #fileID, line: UInt = #line) throws(EventLoopError) -> ScheduledTimer {
        if inEventLoop {
            return ScheduledTimer(loop: self, id: scheduleOnLoop(at: deadline.uptimeNanoseconds, task, file: file, line: line),
                                  remote: nil)
        }
        let record = RemoteTimer()
        try execute({ [self] in
            guard !record.cancelled else { return }
            record.id = scheduleOnLoop(at: deadline.uptimeNanoseconds, task, file: file, line: line)
        }, file: file, line: line)
        return ScheduledTimer(loop: self, id: .invalid, remote: record)
    }

    /// Runs `task` on the loop once `delay` has passed.
    ///
    /// ```swift
    /// let timer = try loop.schedule(after: .seconds(30)) { closeIdleConnection() }
    /// timer.cancel()
    /// ```
    @discardableResult
    public func schedule(after delay: Duration, _ task: @escaping @Sendable () -> Void,
                         file: StaticString = #fileID, line: UInt = #line) throws(EventLoopError) -> ScheduledTimer {
        try schedule(at: Deadline.now() + delay, task, file: file, line: line)
    }

    // MARK: Loop-side timer API (for code already on the loop, such as sockets)

    /// Files a timer for `deadline` (monotonic ns). Call on the loop.
    package func scheduleOnLoop(at deadline: UInt64, _ task: @escaping () -> Void,
                                file: StaticString = #fileID, line: UInt = #line) -> TimerID {
        preconditionInEventLoop()
        return timers.schedule(deadline: deadline, payload: TimerTask(run: tracedOnLoop(task, file: file, line: line)))
    }

    /// Cancels a timer; harmless if it fired or was cancelled already. Call on the loop.
    package func cancelOnLoop(_ id: TimerID) {
        preconditionInEventLoop()
        timers.cancel(id)
    }

    /// Moves a timer's deadline (cheaply when later). Returns false if it already fired. Call on the loop.
    @discardableResult
    package func rescheduleOnLoop(_ id: TimerID, at deadline: UInt64) -> Bool {
        preconditionInEventLoop()
        return timers.reschedule(id, deadline: deadline)
    }

    /// Pending timers. Call on the loop.
    public var pendingTimerCount: Int {
        preconditionInEventLoop()
        return timers.count
    }

    /// Fires every timer due at `now`, in deadline order.
    ///
    /// The phase's lag is one sample: `now` against the wheel's wakeup (the earliest tick with work), when
    /// a timer fired. The wakeup is the poll timeout's when it computed one; otherwise (tasks were waiting,
    /// so the poll did not look at the wheel) it is asked for here.
    func runTimers() {
        guard timers.count > 0 else { return }
        let due = counters.timerWakeup != 0 ? counters.timerWakeup : (timers.nextWakeup() ?? now)
        timers.advance(to: now)
        let before = counters.timers
        if stallThresholdNanoseconds != 0 {
            runTimersTimed()
        } else {
            while let task = timers.popReady() {
                counters.timers &+= 1
                task.run()
            }
        }
        if counters.timers != before { counters.noteLag(now > due ? now - due : 0) }
    }
}

/// A timer's closure, wrapped in a struct: stored directly as the wheel's generic payload, a function value
/// would be re-abstracted through a heap-allocated thunk (one malloc per timer); a concrete field keeps it
/// as it is.
struct TimerTask {
    let run: () -> Void
}
