/// A figure `loadtest compare` judges, how it is read from one report, and which way is better.
enum CompareFigure: String, CaseIterable, Sendable, Codable {
    case throughput
    case p50
    case p90
    case p99
    case p99_9 = "p99.9"
    case errors

    /// How the change is measured: a ratio (throughput and latency: a machine's noise is proportional to
    /// the figure, so the log of the ratio is what stays comparable), or a difference in percentage points
    /// (the error rate, which is often 0 on both sides).
    var isRatio: Bool { self != .errors }

    /// Whether a larger value is worse (latency, errors) rather than better (throughput).
    var largerIsWorse: Bool { self != .throughput }

    /// The figure of one run: requests (MiB for a stream run) per second, a latency percentile in µs, or
    /// errors as a percentage of requests and errors together. Nil when the run has none (no latency
    /// recorded, a throughput of 0): such a figure is not judged.
    func value(of run: RunResult) -> Double? {
        func positive(_ v: Double) -> Double? { v > 0 && v.isFinite ? v : nil }
        let latency = run.latencyUs
        switch self {
        case .throughput: return positive(run.inMebibytes ? run.mibPerSecond : run.requestsPerSecond)
        case .p50: return latency.count > 0 ? positive(latency.p50) : nil
        case .p90: return latency.count > 0 ? positive(latency.p90) : nil
        case .p99: return latency.count > 0 ? positive(latency.p99) : nil
        case .p99_9: return latency.count > 0 ? positive(latency.p99_9) : nil
        case .errors:
            let attempts = Double(run.requests) + Double(run.errors.total)
            return attempts > 0 ? Double(run.errors.total) * 100 / attempts : nil
        }
    }

    /// The percentile a latency figure stands for (50 for p50), nil for the others.
    var percentile: Double? {
        switch self {
        case .p50: 50
        case .p90: 90
        case .p99: 99
        case .p99_9: 99.9
        case .throughput, .errors: nil
        }
    }

    /// The verdict's word: `faster`/`slower` for speed, `fewer errors`/`more errors` for errors.
    func word(for verdict: RunComparison.Verdict) -> String {
        switch verdict {
        case .improved: self == .errors ? "fewer errors" : "faster"
        case .regressed: self == .errors ? "more errors" : "slower"
        case .noDetectableChange: "no detectable change"
        case .notJudged: "not judged"
        }
    }

    /// A run's figure for the table: `41,234/s`, `212.5 µs`, `0.10%`.
    func show(_ value: Double, stream: Bool) -> String {
        switch self {
        case .throughput: stream ? ReportText.fixed(value, 1) + " MiB/s" : ReportText.fixed(value, 0) + "/s"
        case .errors: ReportText.fixed(value, 2) + "%"
        default: ReportText.latency(us: value)
        }
    }
}

extension RunResult {
    /// Whether its throughput is in MiB/s (a stream run's) rather than requests/s.
    var inMebibytes: Bool { LoadMode.traits(ofResults: mode).throughputUnit == .mebibytes }
}
