/// A loop's counters as its own thread keeps them: plain integers, bumped without atomics on the hot path
/// and published to a ``LoopMetricsCell`` before each poll and after each blocking one.
struct LoopCounters {
    /// Readiness events returned by `epoll_wait`.
    var events: UInt64 = 0
    /// Tasks and jobs run.
    var tasks: UInt64 = 0
    /// Timers fired.
    var timers: UInt64 = 0
    /// Nanoseconds working, up to `lastMark`.
    var busy: UInt64 = 0
    /// Nanoseconds in blocking `epoll_wait`s, up to `lastMark`.
    var wait: UInt64 = 0
    /// The last clock reading accounted for in `busy` or `wait`.
    var lastMark: UInt64 = 0
    /// Whether the loop is about to wait (so readers count the time since `lastMark` as waiting).
    var waiting = false
    /// Callbacks that held the loop past the stall threshold.
    var stalls: UInt64 = 0
    /// Publications so far (the sequence lock's generation).
    var publications: UInt64 = 0
    /// Lag samples taken since the last publication: at most one for the timer phase and one for the batch
    /// of tasks from other threads, per iteration.
    var pendingLag: (UInt64, UInt64) = (0, 0)
    var pendingLagCount = 0
    /// The timer wheel's next wakeup (ns) as the poll timeout computed it this iteration, 0 if it did not.
    var timerWakeup: UInt64 = 0
    /// The clock reading the poll timeout took before a blocking wait, 0 if it took none.
    var pollClock: UInt64 = 0
    /// How many events the last `epoll_wait` returned: after a full batch the next poll tries without
    /// blocking first.
    var polledEvents: Int32 = 0
    /// `epoll_wait` calls made, blocking or not (for tests pinning how often the loop polls).
    var polls: UInt64 = 0
    /// When the oldest task of the current batch from other threads was queued (ns), 0 if unknown.
    var remoteBatchQueuedAt: UInt64 = 0

    /// Notes a lag sample for the next publication (at most two are taken per iteration).
    @inline(__always)
    mutating func noteLag(_ nanoseconds: UInt64) {
        if pendingLagCount == 0 { pendingLag.0 = nanoseconds } else { pendingLag.1 = nanoseconds }
        pendingLagCount = min(pendingLagCount + 1, 2)
    }
}
