import FoundationEssentials
import Glibc

/// Whether a change made a server faster or slower, from several loadtest JSON reports per side: the change
/// of each figure (throughput; p50, p90, p99 and p99.9 latency; the error rate) with a confidence interval and
/// a verdict. `loadtest compare` prints this; a Swift perf test can call it directly.
///
/// Each run is one observation: the intervals are Welch's t on the log of the per-run figures (the error rate:
/// on the rates themselves), so run-to-run noise, the large part of a shared machine's noise, is in them. Two
/// runs per side is the least that measures it; docs/loadtest.md says how many runs find which change.
/// With one run per side the intervals come from inside the runs (the histograms' order statistics and the
/// per-second throughput), and ``warnings`` says they leave run-to-run noise out.
///
/// ```swift
/// let comparison = try RunComparison(base: [a1, a2, a3], new: [b1, b2, b3])   // each the Data of a --json file
/// XCTAssertTrue(comparison.regressions.isEmpty, comparison.text)
/// ```
public struct RunComparison: Sendable {
    /// What a figure's interval says.
    public enum Verdict: String, Sendable, Codable {
        /// Better beyond the noise: higher throughput, lower latency, fewer errors.
        case improved
        /// Worse beyond the noise: lower throughput, higher latency, more errors.
        case regressed
        /// The interval contains no change: any change is smaller than these runs can tell.
        case noDetectableChange = "no detectable change"
        /// A side has no value for the figure (no latency recorded, no throughput).
        case notJudged = "not judged"
    }

    /// One figure's change.
    public struct Change: Sendable {
        /// `throughput`, `p50`, `p90`, `p99`, `p99.9` or `errors`.
        public let figure: String
        /// The base side's figure: the geometric mean of its runs (errors: the mean rate, percent); 0 when not
        /// judged. Throughput is per second, latency in µs.
        public let base: Double
        /// The new side's figure, as ``base``.
        public let new: Double
        /// The change: relative for throughput and latency (0.05 is 5 % more), in percentage points for errors.
        public let change: Double
        /// The lower end of the change's interval, on the scale of ``change``.
        public let low: Double
        /// The upper end of the change's interval, on the scale of ``change``.
        public let high: Double
        /// What the interval says.
        public let verdict: Verdict
        /// How the interval was computed (`welch-log-ratio`, `welch-difference`, `histogram-order-statistics`,
        /// `per-second-welch-log-ratio`, `two-proportion`).
        public let method: String
    }

    /// A report that cannot be compared (unreadable, or of another mode than the rest), in one sentence.
    public struct InputError: Error, CustomStringConvertible, Sendable {
        /// What is wrong.
        public let description: String
    }

    /// The confidence of every interval (0.95 by default).
    public let confidence: Double
    /// How many runs the base side has.
    public let baseRuns: Int
    /// How many runs the new side has.
    public let newRuns: Int
    /// Each figure's change, in the order of the table.
    public let changes: [Change]
    /// What the reader should know (one run per side, different settings, fewer runs than recommended).
    public let warnings: [String]
    /// The reports' mode (`echo`, `http`, …).
    let mode: String
    /// Whether throughput is in MiB/s (stream runs) rather than requests/s.
    var stream: Bool { LoadMode.traits(ofResults: mode).throughputUnit == .mebibytes }

    /// The figures that got worse beyond the noise.
    public var regressions: [String] { changes.filter { $0.verdict == .regressed }.map(\.figure) }

    /// The comparison as `loadtest compare` prints it: a table and the warnings.
    public var text: String { CompareText.table(self) }

    /// Compares the reports `base` and `new` (each the bytes of a `loadtest --json` file) at `confidence`
    /// (between 0.5 and 0.9999). Throws ``InputError`` for a side without reports, a report that does not
    /// decode, or reports of different modes.
    public init(base: [Data], new: [Data], confidence: Double = 0.95) throws(InputError) {
        func decode(_ reports: [Data], _ side: String) throws(InputError) -> [RunResult] {
            var runs: [RunResult] = []
            for (i, data) in reports.enumerated() {
                do {
                    runs.append(try RunResult.decode(data))
                } catch {
                    throw InputError(description: "\(side) report \(i + 1) is not a loadtest JSON result "
                        + "(\(RunResult.describeDecodingError(error)))")
                }
            }
            return runs
        }
        try self.init(baseRuns: try decode(base, "base"), newRuns: try decode(new, "new"), confidence: confidence)
    }

    /// Runs per side below which a 5 % change is likely to go unseen on a machine whose runs vary by 4 %
    /// (coefficient of variation): the smallest count that finds it in at least 8 comparisons of 10
    /// (`CompareSimulationTests` finds it by simulation, and docs/loadtest.md gives it).
    static let recommendedRuns = 11

    /// The confidences a comparison accepts.
    static let confidenceRange = 0.5...0.9999

    /// Compares decoded reports.
    init(baseRuns base: [RunResult], newRuns new: [RunResult], confidence: Double = 0.95) throws(InputError) {
        guard !base.isEmpty, !new.isEmpty else {
            throw InputError(description: "a comparison needs at least one report on each side")
        }
        guard Self.confidenceRange.contains(confidence) else {
            throw InputError(description: "the confidence must lie between 50% and 99.99%")
        }
        let modes = Set((base + new).map(\.mode))
        guard modes.count == 1 else {
            let listed = modes.sorted().joined(separator: ", ")
            throw InputError(description: "the reports are of different modes (\(listed)): "
                + "compare runs of one workload")
        }
        self.confidence = confidence
        mode = base[0].mode
        baseRuns = base.count
        newRuns = new.count
        var warnings: [String] = []
        let differences = RunResult.settingDifferences(base + new)
        if !differences.isEmpty || Set((base + new).map(\.connections)).count > 1 {
            let connections = Set((base + new).map(\.connections)).count > 1 ? ["connections"] : []
            let listed = (differences + connections).joined(separator: "; ")
            warnings.append("the runs differ in their settings (\(listed)): "
                + "the change may be the settings'")
        }
        if base.count == 1 && new.count == 1 {
            warnings.append("one run per side: the intervals come from within each run (histogram order statistics, "
                + "per-second throughput) and leave out run-to-run noise, so they are too narrow; run "
                + "\(Self.recommendedRuns) or more per side")
            changes = CompareFigure.allCases.map { Self.withinRuns($0, base[0], new[0], confidence: confidence) }
        } else {
            if min(base.count, new.count) < Self.recommendedRuns {
                warnings.append("\(min(base.count, new.count)) run\(min(base.count, new.count) == 1 ? "" : "s") on a "
                    + "side: a change of a few percent may go undetected (\(Self.recommendedRuns) per side find "
                    + "5% at a run-to-run variation of 4%)")
            }
            if base.count == 1 || new.count == 1 {
                warnings.append("one run on a side: its run-to-run spread is taken to be the other side's")
            }
            changes = CompareFigure.allCases.map { Self.acrossRuns($0, base, new, confidence: confidence) }
        }
        self.warnings = warnings
    }

    /// The verdict of an interval of (new − base) on the figure's own scale.
    static func verdict(low: Double, high: Double, _ figure: CompareFigure) -> Verdict {
        if low > 0 { return figure.largerIsWorse ? .regressed : .improved }
        if high < 0 { return figure.largerIsWorse ? .improved : .regressed }
        return .noDetectableChange
    }

    /// A figure not judged: a side has no value for it.
    static func notJudged(_ figure: CompareFigure, _ method: String) -> Change {
        Change(figure: figure.rawValue, base: 0, new: 0, change: 0, low: 0, high: 0, verdict: .notJudged,
               method: method)
    }

    /// The runs as the unit: Welch's t on the per-run figures (their logs for a ratio).
    static func acrossRuns(_ figure: CompareFigure, _ base: [RunResult], _ new: [RunResult], confidence: Double)
        -> Change {
        let method = figure.isRatio ? "welch-log-ratio" : "welch-difference"
        let b = base.compactMap(figure.value(of:)), n = new.compactMap(figure.value(of:))
        let transform: (Double) -> Double = figure.isRatio ? { log($0) } : { $0 }
        guard let interval = CompareStatistics.welch(
            base: b.map(transform), new: n.map(transform), confidence: confidence)
        else { return notJudged(figure, method) }
        if figure.isRatio {
            return Change(
                figure: figure.rawValue, base: exp(CompareStatistics.mean(b.map(log))),
                new: exp(CompareStatistics.mean(n.map(log))), change: expm1(interval.estimate),
                low: expm1(interval.low), high: expm1(interval.high),
                verdict: verdict(low: interval.low, high: interval.high, figure), method: method)
        }
        return Change(
            figure: figure.rawValue, base: CompareStatistics.mean(b), new: CompareStatistics.mean(n),
            change: interval.estimate, low: interval.low, high: interval.high,
            verdict: verdict(low: interval.low, high: interval.high, figure), method: method)
    }
}
