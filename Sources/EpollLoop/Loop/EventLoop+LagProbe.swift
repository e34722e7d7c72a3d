/// The lag probe: an opt-in timer that fires every `resolution` on the loop, so that the lag histogram gets
/// a sample at that rate whatever the loop is doing (as Node's `monitorEventLoopDelay` does).
///
/// Without it, lag is sampled only when timers fire or tasks from other threads run; a loop whose work all
/// starts on itself (an echo server under load) records almost none, however long its iterations get. The
/// probe records nothing itself: each time it fires, the timer phase takes its usual sample, the
/// iteration's clock reading against the tick the probe was due on, so the histogram shows how late the
/// loop got to it. Its next firing is filed `resolution` after that reading.
extension EventLoop {
    /// The lag probe's default period: 10 ms, as Node's `monitorEventLoopDelay`.
    public static var defaultLagProbeResolution: Duration { .milliseconds(10) }

    /// Starts the lag probe: a timer that fires every `resolution` (at least the timer wheel's 1 ms tick;
    /// shorter periods are rounded up), so that ``LoopMetrics/lag`` gets a sample at that rate whatever the
    /// loop is doing. Started again, the probe keeps running with the new period. Any thread.
    ///
    /// Each firing costs a timer on the loop; an idle loop wakes every `resolution` for it (and records lags
    /// of 0 to about 1 ms, the poll timeout's whole milliseconds). A callback that holds the loop for
    /// 100 ms shows as a sample of about 100 ms less up to one period.
    ///
    /// ```swift
    /// try loop.startLagProbe()                          // every 10 ms
    /// print(loop.metrics.lag.percentile(0.99))
    /// ```
    ///
    /// - Throws: ``EventLoopError/shutDown`` if the loop is shut down.
    public func startLagProbe(resolution: Duration = EventLoop.defaultLagProbeResolution) throws(EventLoopError) {
        let period = max(TimerWheel<TimerTask>.resolution, UInt64(clamping: resolution.nanoseconds))
        try runOnLoop { loop in
            if let probe = loop.lagProbe { loop.timers.cancel(probe.timer) }
            loop.lagProbe = (loop.scheduleLagProbe(after: period), period)
        }
    }

    /// Stops the lag probe, if it runs; the samples it took stay in the histogram. Any thread.
    ///
    /// - Throws: ``EventLoopError/shutDown`` if the loop is shut down.
    public func stopLagProbe() throws(EventLoopError) {
        try runOnLoop { loop in
            if let probe = loop.lagProbe { loop.timers.cancel(probe.timer) }
            loop.lagProbe = nil
        }
    }

    /// Files the probe's next firing `period` ns after the iteration's clock reading. Call on the loop.
    private func scheduleLagProbe(after period: UInt64) -> TimerID {
        scheduleOnLoop(at: now &+ period) { [unowned self] in
            guard let probe = lagProbe else { return }
            lagProbe = (scheduleLagProbe(after: probe.period), probe.period)
        }
    }

    /// Runs `body` on the loop: at once when called there, else queued.
    private func runOnLoop(_ body: @escaping @Sendable (EventLoop) -> Void) throws(EventLoopError) {
        if inEventLoop {
            body(self)
        } else {
            try execute { [self] in body(self) }
        }
    }
}
