/// A pass/fail criterion on a run's figures, as CI pipelines gate on them (k6's thresholds, Gatling's
/// assertions): `--threshold 'p99<10ms'`, `--threshold 'errors<0.1%'`, `--threshold 'rate>=50k'`.
///
/// A threshold is `METRIC OP VALUE`:
/// - latency (from the intended send time in open loop): `p50`, `p90`, `p95`, `p99`, `p99.9`, any `pN` or
///   k6's `p(N)`, `median`, `mean` (or `avg`), `min`, `max`; the value takes `ns`, `us` (`µs`), `ms` or `s`,
///   and a bare number is milliseconds, as in k6;
/// - `rate`: requests per second over the window (`k` = 1,000, an optional `/s`);
/// - `requests`: requests completed in the window;
/// - `errors`: the error count, or with `%` the errors as a share of the requests completed in the window;
/// - OP is `<`, `<=`, `>`, `>=` or `==`;
/// - a scope after the metric judges a part of the run, as k6's tagged sub-metrics: `{url:/search?q=1}` one of
///   several `--url`s, `{stage:2}` the second of `--stages` (`p99{url:/search}<50ms`, `rate{stage:2}>=19k`).
///
/// ```swift
/// let p99 = try Threshold.parse("p99<10ms")
/// var result = try LoadRunner(config: config).run()
/// result.checkThresholds([p99])
/// result.thresholdsPassed   // false when p99 was 10 ms or more
/// ```
package struct Threshold: Sendable, Equatable {
    /// The figure a threshold judges.
    package enum Metric: Sendable, Equatable {
        /// A latency percentile (0 < p ≤ 100).
        case percentile(Double)
        case mean, min, max
        /// Requests per second over the window.
        case rate
        /// Requests completed in the window.
        case requests
        /// Errors counted.
        case errors
        /// Errors per 100 requests completed in the window.
        case errorPercent

        /// The unit of the figure and of the limit, as the JSON names it.
        var unit: String {
            switch self {
            case .percentile, .mean, .min, .max: return "us"
            case .rate: return "per_second"
            case .requests, .errors: return "count"
            case .errorPercent: return "percent"
            }
        }
    }

    /// How the figure must compare with the limit.
    package enum Comparison: String, Sendable, Equatable, CaseIterable {
        case lessOrEqual = "<=", greaterOrEqual = ">=", equal = "==", less = "<", greater = ">"

        func holds(_ value: Double, _ limit: Double) -> Bool {
            switch self {
            case .less: return value < limit
            case .lessOrEqual: return value <= limit
            case .greater: return value > limit
            case .greaterOrEqual: return value >= limit
            case .equal: return value == limit
            }
        }
    }

    /// The part of a run a threshold judges.
    package enum Scope: Sendable, Equatable {
        /// One of several `--url`s, by its path (with query).
        case url(String)
        /// One of `--stages`, from 1.
        case stage(Int)
    }

    /// The threshold as written (`p99<10ms`), its name in the report and the JSON.
    package let text: String
    package let metric: Metric
    /// The part judged; nil for the whole run.
    package let scope: Scope?
    package let comparison: Comparison
    /// The limit in the metric's unit (latency: µs; rate: per second; errors with `%`: percent).
    package let limit: Double

    /// A malformed threshold, found while the command line is read.
    package enum ParseError: Error, Equatable, CustomStringConvertible {
        /// No `<`, `<=`, `>`, `>=` or `==` in it.
        case noComparison(String)
        /// A name that is not a metric.
        case unknownMetric(String, threshold: String)
        /// `pN` with N not in (0, 100].
        case badPercentile(String, threshold: String)
        /// A value that does not fit the metric.
        case badValue(String, threshold: String, expected: String)
        /// A scope that is not `{url:PATH}` or `{stage:N}`.
        case badScope(String, threshold: String)

        package var description: String {
            switch self {
            case .noComparison(let text):
                return "threshold '\(text)' has no comparison: write METRIC<VALUE, such as p99<10ms, errors<0.1% "
                    + "or rate>=50000 (<, <=, >, >= or ==)"
            case .unknownMetric(let name, let text):
                return "threshold '\(text)': unknown metric '\(name)'; use p50, p90, p95, p99, p99.9 (any pN or "
                    + "p(N)), median, mean, min, max, rate, requests or errors"
            case .badPercentile(let name, let text):
                return "threshold '\(text)': '\(name)' is not a percentile from p0.001 to p100"
            case .badValue(let value, let text, let expected):
                return "threshold '\(text)': '\(value)' is not \(expected)"
            case .badScope(let scope, let text):
                return "threshold '\(text)': '\(scope)' is not a scope: write {url:/path} (one of several --url) "
                    + "or {stage:N} (one of --stages, from 1)"
            }
        }
    }

    /// Parses `METRIC[{SCOPE}] OP VALUE` (spaces allowed around the parts).
    package static func parse(_ text: String) throws(ParseError) -> Threshold {
        let chars = Array(text)
        // A scope's URL may hold '=' or '<': the comparison is looked for after it.
        let open = chars.firstIndex(of: "{")
        let close = open.flatMap { o in chars[o...].firstIndex(of: "}") }
        if open != nil && close == nil { throw .badScope(String(chars[open!...]), threshold: text) }
        let searchFrom = close.map { $0 + 1 } ?? 0
        guard let at = chars[searchFrom...].firstIndex(where: { "<>=".contains($0) }) else { throw .noComparison(text) }
        var scope: Scope?
        if let open, let close {
            guard open < at else { throw .noComparison(text) }
            let inside = String(chars[(open + 1)..<close])
            if inside.hasPrefix("url:"), inside.count > 4 {
                scope = .url(String(inside.dropFirst(4)).trimmed)
            } else if inside.hasPrefix("stage:"), let n = Int(String(inside.dropFirst(6)).trimmed), n >= 1 {
                scope = .stage(n)
            } else {
                throw .badScope("{\(inside)}", threshold: text)
            }
            guard String(chars[(close + 1)..<at]).trimmed.isEmpty else { throw .noComparison(text) }
        }
        let name = String(chars[..<(open ?? at)]).trimmed.lowercased()
        let rest = String(chars[at...])
        guard let comparison = Comparison.allCases.first(where: { rest.hasPrefix($0.rawValue) }) else {
            throw .noComparison(text)
        }
        let value = String(rest.dropFirst(comparison.rawValue.count)).trimmed
        guard !name.isEmpty else { throw .unknownMetric(name, threshold: text) }
        var metric: Metric
        switch name {
        case "median": metric = .percentile(50)
        case "mean", "avg": metric = .mean
        case "min": metric = .min
        case "max": metric = .max
        case "rate", "rps": metric = .rate
        case "requests", "count": metric = .requests
        case "errors": metric = value.hasSuffix("%") ? .errorPercent : .errors
        default:
            guard name.hasPrefix("p") else { throw .unknownMetric(name, threshold: text) }
            var digits = name.dropFirst()
            if digits.hasPrefix("(") && digits.hasSuffix(")") { digits = digits.dropFirst().dropLast() }
            guard !digits.isEmpty, digits.allSatisfy({ $0.isNumber || $0 == "." }) else {
                throw .unknownMetric(name, threshold: text)
            }
            guard let p = Double(digits), p > 0, p <= 100 else { throw .badPercentile(name, threshold: text) }
            metric = .percentile(p)
        }
        let limit: Double?
        switch metric {
        case .percentile, .mean, .min, .max:
            limit = microseconds(value)
        case .rate:
            limit = CommandLineParser.number(value.hasSuffix("/s") ? String(value.dropLast(2)) : value)
        case .requests, .errors:
            limit = CommandLineParser.number(value).flatMap { $0 == $0.rounded() ? $0 : nil }
        case .errorPercent:
            limit = Double(String(value.dropLast()).trimmed).flatMap { $0 >= 0 && $0 <= 100 ? $0 : nil }
        }
        guard let limit, limit >= 0, limit.isFinite else {
            throw .badValue(value, threshold: text, expected: Self.expected(metric))
        }
        return Threshold(text: text.trimmed, metric: metric, scope: scope, comparison: comparison, limit: limit)
    }

    private init(text: String, metric: Metric, scope: Scope?, comparison: Comparison, limit: Double) {
        self.text = text
        self.metric = metric
        self.scope = scope
        self.comparison = comparison
        self.limit = limit
    }

    private static func expected(_ metric: Metric) -> String {
        switch metric {
        case .percentile, .mean, .min, .max: return "a time such as 10ms, 500us, 2s (a bare number is ms)"
        case .rate: return "requests per second such as 50000 or 50k"
        case .requests, .errors: return "a whole number (or, for errors, a percentage such as 0.1%)"
        case .errorPercent: return "a percentage from 0% to 100%"
        }
    }

    /// A time in µs: `ns`, `us`/`µs`, `ms`, `s`, or a bare number of milliseconds.
    static func microseconds(_ text: String) -> Double? {
        let lower = text.lowercased()
        for (suffix, scale) in [("ns", 0.001), ("us", 1), ("µs", 1), ("ms", 1000), ("s", 1_000_000)]
        where lower.hasSuffix(suffix) {
            return Double(String(lower.dropLast(suffix.count)).trimmed).map { $0 * scale }
        }
        return Double(lower).map { $0 * 1000 }
    }

    /// Whether the threshold judges latency (which stream and idle runs do not measure).
    var isLatency: Bool {
        switch metric {
        case .percentile, .mean, .min, .max: return true
        default: return false
        }
    }

    /// The figures a threshold reads: the whole run's, or one part's.
    private struct Judged {
        var histogram: Histogram
        var requestsPerSecond: Double
        var requests: UInt64
        var errors: UInt64

        init(_ p: RunResult.PartFigures) {
            histogram = p.histogram.histogram ?? Histogram()
            requestsPerSecond = p.requestsPerSecond
            requests = p.requests
            errors = p.errors
        }

        init(_ r: RunResult) {
            histogram = r.latencyHistogram
            requestsPerSecond = r.requestsPerSecond
            requests = r.requests
            errors = r.errors.total
        }
    }

    /// The part of `result` the scope names; nil when the run has no such part.
    private func judged(_ result: RunResult) -> Judged? {
        switch scope {
        case nil: return Judged(result)
        case .url(let path)?:
            if let urls = result.urls { return urls.first { $0.url == path }.map { Judged($0.figures) } }
            // One URL: its figures are the run's.
            let onePath = LoadMode.traits(ofResults: result.mode).targetHasPath && !result.target.contains(",")
            return onePath && result.target.hasSuffix(path) ? Judged(result) : nil
        case .stage(let n)?:
            guard let stages = result.stages, n <= stages.count else { return nil }
            return Judged(stages[n - 1].figures)
        }
    }

    /// The run's figure this threshold judges, in its unit; nil when the run has none (no latency recorded, no
    /// such URL or stage).
    func value(in result: RunResult) -> Double? {
        guard let part = judged(result) else { return nil }
        let histogram = part.histogram
        switch metric {
        case .percentile(let p): return histogram.count == 0 ? nil : Double(histogram.percentile(p)) / 1000
        case .mean: return histogram.count == 0 ? nil : histogram.mean / 1000
        case .min: return histogram.count == 0 ? nil : Double(histogram.min) / 1000
        case .max: return histogram.count == 0 ? nil : Double(histogram.max) / 1000
        case .rate: return part.requestsPerSecond
        case .requests: return Double(part.requests)
        case .errors: return Double(part.errors)
        case .errorPercent:
            if part.requests == 0 { return part.errors == 0 ? 0 : 100 }
            return min(100, Double(part.errors) * 100 / Double(part.requests))
        }
    }

    /// The outcome of this threshold on `result`: a figure the run does not have fails.
    package func check(_ result: RunResult) -> RunResult.ThresholdOutcome {
        let value = value(in: result)
        return RunResult.ThresholdOutcome(threshold: text, value: value, limit: limit, unit: metric.unit,
                                          passed: value.map { comparison.holds($0, limit) } ?? false)
    }

    /// The thresholds `loadtest merge` checks: those given to it, or else those the results were run with
    /// (each once, in order).
    package static func forMerge(given: [Threshold], results: [RunResult]) -> [Threshold] {
        guard given.isEmpty else { return given }
        var seen: Set<String> = []
        var thresholds: [Threshold] = []
        for outcome in results.flatMap({ $0.thresholds ?? [] }) where seen.insert(outcome.threshold).inserted {
            if let threshold = try? parse(outcome.threshold) { thresholds.append(threshold) }
        }
        return thresholds
    }
}

extension RunResult {
    /// One threshold's outcome, as the JSON's `thresholds` lists them.
    package struct ThresholdOutcome: Codable, Sendable, Equatable {
        /// The threshold as written (`p99<10ms`).
        package var threshold: String
        /// The run's figure, in `unit`; nil when the run did not measure it (which fails the threshold).
        package var value: Double?
        /// The limit, in `unit`.
        package var limit: Double
        /// `us`, `per_second`, `count` or `percent`.
        package var unit: String
        package var passed: Bool
    }

    /// Checks `thresholds` against the figures (replacing the outcomes of any checked before); none clears them.
    package mutating func checkThresholds(_ thresholds: [Threshold]) {
        self.thresholds = thresholds.isEmpty ? nil : thresholds.map { $0.check(self) }
    }

    /// False when a threshold failed.
    package var thresholdsPassed: Bool { thresholds?.allSatisfy(\.passed) ?? true }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    var trimmed: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}

extension ReportText {
    /// A line per threshold: pass or FAIL, the threshold, the run's figure.
    static func thresholds(_ outcomes: [RunResult.ThresholdOutcome]) -> [String] {
        let failed = outcomes.filter { !$0.passed }.count
        let width = outcomes.map(\.threshold.count).max() ?? 0
        let all = outcomes.count == 1 ? "the one" : "all \(outcomes.count)"
        var lines = ["  thresholds: \(failed == 0 ? "\(all) passed" : "\(failed) of \(outcomes.count) failed")"]
        for o in outcomes {
            let name = o.threshold + String(repeating: " ", count: max(0, width - o.threshold.count))
            lines.append("    \(o.passed ? "pass" : "FAIL")  \(name)  "
                + "\(o.value.map { figure($0, unit: o.unit) } ?? "not measured")")
        }
        return lines
    }

    /// A threshold's figure in its unit.
    static func figure(_ value: Double, unit: String) -> String {
        switch unit {
        case "us": return latency(us: value)
        case "per_second": return fixed(value, 0) + "/s"
        case "percent": return fixed(value, 3) + " %"
        default: return grouped(UInt64(max(0, value)))
        }
    }
}
