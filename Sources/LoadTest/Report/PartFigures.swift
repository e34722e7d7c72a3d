extension RunResult {
    /// The figures of a part of a run (a `--stages` stage, one of several `--url`s): its replies, their rate and
    /// latency, its errors. The histogram travels with them, so merged results keep exact percentiles.
    package struct PartFigures: Codable, Sendable, Equatable {
        /// Replies in the part, and per second of it.
        package var requests: UInt64
        package var requestsPerSecond: Double
        /// Errors counted in the part.
        package var errors: UInt64
        /// Latency percentiles (µs) and the histogram (ns), as the run's.
        package var latencyUs: Latency
        package var histogram: HistogramData

        enum CodingKeys: String, CodingKey {
            case requests, requestsPerSecond = "requests_per_second", errors, latencyUs = "latency_us", histogram
        }

        /// The figures of the replies in `histogram` (one per reply), over `seconds`.
        init(_ histogram: Histogram, errors: UInt64, seconds: Double) {
            requests = histogram.count
            requestsPerSecond = seconds > 0 ? Double(histogram.count) / seconds : 0
            self.errors = errors
            latencyUs = Latency(histogram)
            self.histogram = HistogramData(histogram)
        }

        /// Adds the same part of a run made at the same time by another process (merge): counts and rates add,
        /// histograms merge.
        mutating func add(_ other: PartFigures) {
            var h = histogram.histogram ?? Histogram()
            h.merge(other.histogram.histogram ?? Histogram())
            histogram = HistogramData(h)
            latencyUs = Latency(h)
            requests += other.requests
            requestsPerSecond += other.requestsPerSecond
            errors += other.errors
        }
    }
}

extension ReportText {
    /// `1,234/s (12,340), p50 1.20 ms, p99 3.40 ms, max 9.00 ms, 0 errors`.
    static func partFigures(_ p: RunResult.PartFigures) -> String {
        let timing = p.latencyUs.count > 0
            ? ", p50 \(latency(us: p.latencyUs.p50)), p99 \(latency(us: p.latencyUs.p99)), max "
                + "\(latency(us: p.latencyUs.max))" : ""
        return "\(fixed(p.requestsPerSecond, 0))/s (\(grouped(p.requests)))\(timing), "
            + "\(count(Int(clamping: p.errors), "error"))"
    }
}
