extension EventLoopGroup {
    /// Starts every loop's lag probe (see ``EventLoop/startLagProbe(resolution:)``): a timer per loop that
    /// fires every `resolution`, so that each loop's lag histogram is sampled at that rate whatever it is
    /// doing. Any thread.
    ///
    /// ```swift
    /// let group = try EventLoopGroup()
    /// try group.startLagProbe()                    // every 10 ms on each loop
    /// print(group.metrics.lag.percentile(0.99))
    /// ```
    ///
    /// - Throws: ``EventLoopError/shutDown`` if the group is shut down.
    public func startLagProbe(resolution: Duration = EventLoop.defaultLagProbeResolution) throws(EventLoopError) {
        for loop in loops { try loop.startLagProbe(resolution: resolution) }
    }

    /// Stops every loop's lag probe. Any thread.
    ///
    /// - Throws: ``EventLoopError/shutDown`` if the group is shut down.
    public func stopLagProbe() throws(EventLoopError) {
        for loop in loops { try loop.stopLagProbe() }
    }
}
