/// A consistent snapshot of one loop's counters (or a group's, summed), read from any thread through
/// ``EventLoop/metrics`` or ``EventLoopGroup/metrics``.
///
/// The counters only grow: for a figure over an interval, take two snapshots and subtract with
/// ``since(_:)``. ``utilisation`` over an interval is the share of it the loop spent working rather than
/// waiting in `epoll_wait`.
///
/// ```swift
/// let before = loop.metrics
/// // ... some time later
/// let window = loop.metrics.since(before)
/// print(window.utilisation, window.lag.percentile(0.99))
/// ```
public struct LoopMetrics: Sendable, Equatable {
    /// The loop's name (for a group: the loops' names joined by commas).
    public var loop: String
    /// Loop iterations completed.
    public var iterations: UInt64 = 0
    /// Readiness events `epoll_wait` returned (the loop's own wakeup eventfd included).
    public var events: UInt64 = 0
    /// Tasks (`execute` closures and Swift concurrency jobs) run.
    public var tasks: UInt64 = 0
    /// Timers fired.
    public var timers: UInt64 = 0
    /// Descriptors registered now (a gauge, not a counter).
    public var registeredDescriptors: Int = 0
    /// Nanoseconds spent working: everything but waiting in a blocking `epoll_wait`.
    public var busyNanoseconds: UInt64 = 0
    /// Nanoseconds spent waiting in a blocking `epoll_wait`.
    public var waitNanoseconds: UInt64 = 0
    /// Callbacks that held the loop longer than its stall threshold (0 when stall detection is off).
    public var stalls: UInt64 = 0
    /// How late timers and tasks queued from other threads ran against when they were due.
    public var lag = LagHistogram()
    /// What the loop's sockets did, by kind (LoopSocket's connections and UDP sockets).
    public var sockets = SocketCounts()

    /// An empty snapshot for `loop`.
    public init(loop: String) {
        self.loop = loop
    }

    /// The share of time spent working, 0 (always waiting) to 1 (never waiting); 0 before any time passed.
    public var utilisation: Double {
        let total = busyNanoseconds &+ waitNanoseconds
        return total == 0 ? 0 : Double(busyNanoseconds) / Double(total)
    }

    /// The counts from `earlier` (a snapshot of the same loop or group taken before this one) to this
    /// snapshot; ``registeredDescriptors`` stays this snapshot's.
    public func since(_ earlier: LoopMetrics) -> LoopMetrics {
        var result = self
        result.iterations = iterations &- earlier.iterations
        result.events = events &- earlier.events
        result.tasks = tasks &- earlier.tasks
        result.timers = timers &- earlier.timers
        result.busyNanoseconds = busyNanoseconds &- earlier.busyNanoseconds
        result.waitNanoseconds = waitNanoseconds &- earlier.waitNanoseconds
        result.stalls = stalls &- earlier.stalls
        result.lag = lag.since(earlier.lag)
        result.sockets = sockets.since(earlier.sockets)
        return result
    }

    /// The sum of several loops' snapshots, named `name`: counters and descriptors add up, and the lag
    /// histograms merge; ``utilisation`` is then the group's average.
    public static func sum(_ loops: [LoopMetrics], name: String) -> LoopMetrics {
        var total = LoopMetrics(loop: name)
        for m in loops {
            total.iterations &+= m.iterations
            total.events &+= m.events
            total.tasks &+= m.tasks
            total.timers &+= m.timers
            total.registeredDescriptors += m.registeredDescriptors
            total.busyNanoseconds &+= m.busyNanoseconds
            total.waitNanoseconds &+= m.waitNanoseconds
            total.stalls &+= m.stalls
            total.lag.add(m.lag)
            total.sockets.add(m.sockets)
        }
        return total
    }
}
