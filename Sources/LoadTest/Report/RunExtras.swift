import EpollLoop

/// What a run feeds once a second besides its progress line: the HdrHistogram interval log (`--hdr-log`) and
/// the metrics endpoint (`--metrics`). Used by the coordinator thread only.
final class RunExtras {
    private let config: LoadConfig
    private let log: HdrIntervalLog?
    private let metrics: MetricsEndpoint?
    private var previous = Histogram()
    private var previousEnd: UInt64?

    /// Opens the metrics listener on `loop` (throws if it cannot bind) and prepares the log.
    init(config: LoadConfig, loop: EventLoop, output: (String) -> Void) throws {
        self.config = config
        log = config.hdrLogPath.map {
            let id = config.runID.map { ", id \($0)" } ?? ""
            let from = config.rate != nil ? " from the intended send time" : ""
            return HdrIntervalLog(path: $0, description: "loadtest \(config.mode.resultName) "
                + "\(config.host):\(config.port), "
                                  + "\(config.connections) connections\(id); latency in ns\(from)")
        }
        if let address = config.metrics {
            do {
                metrics = try MetricsEndpoint(address: address, loop: loop)
            } catch {
                throw LoadTestError("--metrics: cannot listen on \(address.host):\(address.port): \(error)")
            }
            metrics!.publish(MetricsEndpoint.text(config: config, totals: WorkerSnapshot(), errors: ErrorCounts(),
                                                  histogram: nil))
            let host = address.host.contains(":") ? "[\(address.host)]" : address.host
            if !config.quiet { output("  metrics at http://\(host):\(metrics!.port)/metrics") }
        } else {
            metrics = nil
        }
    }

    /// Whether ``tick(windowStart:end:histogram:totals:errors:)`` has anything to do.
    var isActive: Bool { log != nil || metrics != nil }

    /// One second of the run ended at `end` (ns); `histogram` is the window's so far (nil before the window).
    /// `targetRate`: the open-loop target over that second.
    func tick(windowStart: UInt64, end: UInt64, histogram: Histogram?, totals: WorkerSnapshot, errors: ErrorCounts,
              targetRate: Double? = nil) {
        metrics?.publish(MetricsEndpoint.text(config: config, totals: totals, errors: errors, histogram: histogram,
                                              targetRate: targetRate))
        guard let log, let histogram, end > windowStart else { return }
        let start = previousEnd ?? windowStart
        log.add(start: LoadRunner.wallClock(at: start), end: LoadRunner.wallClock(at: end),
                histogram: histogram.subtracting(previous))
        previous = histogram
        previousEnd = end
    }

    /// Writes the log; throws a plain line if it cannot.
    func finish() throws {
        do {
            try log?.write()
        } catch {
            throw LoadTestError("\(error)")
        }
    }

    /// Stops serving metrics.
    func close() {
        metrics?.close()
    }
}
