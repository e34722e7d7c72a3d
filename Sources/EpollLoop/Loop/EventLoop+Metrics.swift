extension EventLoop {
    /// A consistent snapshot of the loop's counters, from any thread, without blocking the loop.
    ///
    /// The loop publishes its counters once per iteration, just before it polls (and as it wakes from a
    /// blocking poll); a snapshot shows the work of the iterations finished by then, and counts the time since as waiting if the loop is asleep in
    /// `epoll_wait`, or as busy otherwise (so a loop stuck in a long callback shows as busy while it is).
    ///
    /// ```swift
    /// let before = loop.metrics
    /// try loop.execute { /* ... */ }
    /// print(loop.metrics.since(before).tasks)
    /// ```
    public var metrics: LoopMetrics {
        var metrics = metricsCell.read(loop: name, now: Deadline.now().uptimeNanoseconds)
        metrics.sockets = SocketCounterSlots.read(socketCounters)
        return metrics
    }

    /// Publishes the loop's counters (loop thread only): before each poll, and after a blocking one.
    @inline(__always)
    func publishMetrics() {
        counters.publications &+= 1
        metricsCell.write(counters, iterations: iterations, descriptors: registrations.count)
        counters.pendingLagCount = 0
    }
}
