import Foundation
import XCTest
@testable import LoadTest

/// HistogramTests' SplitMix64 as the standard library's generator, so every simulated report is the same on
/// every run, with normal values beside its uniform ones.
extension SplitMix64: RandomNumberGenerator {
    /// A standard normal value (Box–Muller).
    mutating func normal() -> Double {
        let u = Double.random(in: Double.ulpOfOne..<1, using: &self)
        let v = Double.random(in: 0..<1, using: &self)
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
    }
}

/// Synthetic loadtest reports: a machine whose runs vary by `cv` (each run's figures scaled by its own
/// log-normal factor), and a build that shifts throughput and latency by known factors.
struct SyntheticRuns {
    var random: SplitMix64
    /// Run-to-run variation (the standard deviation of the log of a run's figure, about its coefficient of
    /// variation).
    var cv = 0.04

    init(seed: UInt64, cv: Double = 0.04) {
        random = SplitMix64(state: seed)
        self.cv = cv
    }

    /// A report whose latency percentiles are set directly (fast, for simulations of many comparisons): each
    /// percentile varies with the run's factor and a little on its own, the tail more.
    mutating func report(throughput: Double = 1, latency: Double = 1, errorPercent: Double = 0,
                         mode: String = "echo") -> RunResult {
        let runFactor = exp(cv * random.normal())
        var r = Self.template
        r.mode = mode
        r.requestsPerSecond = 50_000 * throughput * exp(cv * random.normal())
        r.requests = UInt64(r.requestsPerSecond * 10)
        r.errors.total = UInt64((Double(r.requests) * errorPercent / (100 - errorPercent)).rounded())
        r.latencyUs.count = 500_000
        for (keyPath, value, ownNoise) in [(\RunResult.Latency.p50, 200.0, 0.3), (\.p90, 400, 0.5), (\.p99, 900, 0.8),
                                           (\.p99_9, 2000, 1.2)] {
            r.latencyUs[keyPath: keyPath] = value * latency * runFactor * exp(cv * ownNoise * random.normal())
        }
        return r
    }

    /// A report with a real histogram of `samples` latencies (log-normal about 200 µs) and a timeline of 10
    /// measured seconds; `withinRun`: how much one second's throughput varies about its run's.
    mutating func histogramReport(throughput: Double = 1, latency: Double = 1, samples: Int = 5000,
                                  withinRun: Double = 0.02) -> RunResult {
        let runFactor = exp(cv * random.normal())
        var h = Histogram()
        for _ in 0..<samples {
            h.record(UInt64(200_000 * latency * runFactor * exp(0.5 * random.normal())))
        }
        var r = Self.empty(mode: "echo", histogram: h)
        let rate = 50_000 * throughput * exp(cv * random.normal())
        r.timeline = (1...11).map { t in
            RunResult.Sample(t: Double(t), requestsPerSecond: rate * exp(withinRun * random.normal()), mibPerSecond: 0,
                             connections: 10, errors: 0, warmup: t == 1)
        }
        r.requestsPerSecond = r.timeline.filter { !$0.warmup }.map(\.requestsPerSecond).reduce(0, +) / 10
        r.requests = UInt64(r.requestsPerSecond * 10)
        return r
    }

    /// A report to fill in, made once: a histogram's percentiles take a while to compute in a debug build.
    static let template: RunResult = {
        var h = Histogram()
        h.record(1000)
        return empty(mode: "echo", histogram: h)
    }()

    static func empty(mode: String, histogram h: Histogram) -> RunResult {
        RunResult(mode: mode, target: "127.0.0.1:9", connections: 10, connectionsEstablished: 10, connectionsFailed: 0,
                  connectionsOpen: 10, messageSize: 64, pipeline: 1, targetRate: nil, loops: 1, durationSeconds: 10,
                  warmupSeconds: 1, requests: 0, requestsPerSecond: 0, bytes: 0, mibPerSecond: 0,
                  errors: RunResult.Errors(ErrorCounts(), first: nil), latencyUs: RunResult.Latency(h),
                  histogram: RunResult.HistogramData(h), timeline: [])
    }
}

/// `RunComparison`'s statistics, verdicts and fallbacks on reports with known changes.
final class CompareTests: XCTestCase {
    private func change(_ c: RunComparison, _ figure: String) throws -> RunComparison.Change {
        try XCTUnwrap(c.changes.first { $0.figure == figure }, figure)
    }

    func testQuantilesMatchPublishedValues() {
        // Values from SciPy's stats.t.ppf and stats.norm.ppf.
        for (p, df, expected) in [(0.975, 1.0, 12.706204736174694), (0.975, 4, 2.7764451051977934),
                                  (0.975, 30, 2.0422724563012378), (0.995, 10, 3.16927267261695),
                                  (0.975, 2.5, 3.5746548420036817)] {
            XCTAssertEqual(CompareStatistics.studentQuantile(p, degreesOfFreedom: df), expected, accuracy: 1e-8, "t(\(p), \(df))")
            XCTAssertEqual(CompareStatistics.studentQuantile(1 - p, degreesOfFreedom: df), -expected, accuracy: 1e-8)
        }
        XCTAssertEqual(CompareStatistics.normalQuantile(0.975), 1.959963984540054, accuracy: 1e-9)
        XCTAssertEqual(CompareStatistics.normalQuantile(0.999), 3.090232306167813, accuracy: 1e-9)
        XCTAssertEqual(CompareStatistics.normalQuantile(0.5), 0, accuracy: 1e-9)
    }

    func testWelchIntervalMatchesAWorkedExample() throws {
        // SciPy: the log ratio's mean and Welch interval for these runs.
        let base = [100.0, 104, 98, 101, 97].map(log), new = [108.0, 110, 103, 107].map(log)
        let interval = try XCTUnwrap(CompareStatistics.welch(base: base, new: new, confidence: 0.95))
        XCTAssertEqual(interval.estimate, 0.06767034207310818, accuracy: 1e-12)
        XCTAssertEqual(interval.low, 0.02337041607266077, accuracy: 1e-8)
        XCTAssertEqual(interval.high, 0.11197026807355559, accuracy: 1e-8)
        XCTAssertNil(CompareStatistics.welch(base: [1], new: [2], confidence: 0.95), "one value a side: no spread")
        let same = try XCTUnwrap(CompareStatistics.welch(base: [3, 3], new: [3, 3, 3], confidence: 0.95))
        XCTAssertEqual(same, .init(estimate: 0, low: 0, high: 0))
    }

    func testAShiftIsFoundAndMeasured() throws {
        var runs = SyntheticRuns(seed: 7, cv: 0.03)
        let count = RunComparison.recommendedRuns
        let base = (0..<count).map { _ in runs.histogramReport() }
        let new = (0..<count).map { _ in runs.histogramReport(throughput: 0.8, latency: 1.2) }
        let c = try RunComparison(baseRuns: base, newRuns: new)
        for figure in ["p50", "p90", "p99", "p99.9"] {
            let latency = try change(c, figure)
            XCTAssertEqual(latency.verdict, .regressed, "\(figure): \(c.text)")
            XCTAssertEqual(latency.method, "welch-log-ratio")
            XCTAssertTrue(latency.low < 0.2 && 0.2 < latency.high, "\(figure): the true change lies in the interval: \(c.text)")
        }
        let throughput = try change(c, "throughput")
        XCTAssertEqual(throughput.verdict, .regressed, c.text)
        XCTAssertEqual(throughput.change, -0.2, accuracy: 0.04)
        XCTAssertEqual(try change(c, "errors").verdict, .noDetectableChange, "no errors on either side")
        XCTAssertEqual(c.regressions, ["throughput", "p50", "p90", "p99", "p99.9"])
        XCTAssertTrue(c.warnings.isEmpty, "\(c.warnings)")
        let text = c.text
        XCTAssertTrue(text.contains("\(count) base runs, \(count) new runs (echo)"), text)
        XCTAssertTrue(text.contains("95% interval"), text)
        XCTAssertTrue(text.contains("slower"), text)
        XCTAssertTrue(text.contains("Welch's t interval on the log of the per-run figures"), text)

        // The other way round, the same runs are faster by as much.
        let back = try RunComparison(baseRuns: new, newRuns: base)
        XCTAssertEqual(try change(back, "p99").verdict, .improved)
        XCTAssertEqual(try change(back, "throughput").verdict, .improved)
        XCTAssertTrue(back.text.contains("faster"), back.text)
        XCTAssertEqual(back.regressions, [])
    }

    func testEqualRunsShowNoChangeAndFewRunsAreWarnedOf() throws {
        var runs = SyntheticRuns(seed: 11)
        let c = try RunComparison(baseRuns: (0..<3).map { _ in runs.report() }, newRuns: (0..<3).map { _ in runs.report() })
        XCTAssertEqual(c.changes.map(\.verdict), Array(repeating: .noDetectableChange, count: 6), c.text)
        XCTAssertEqual(c.changes.map(\.figure), ["throughput", "p50", "p90", "p99", "p99.9", "errors"])
        XCTAssertEqual(c.warnings.count, 1)
        XCTAssertTrue(c.warnings[0].hasPrefix("3 runs on a side: a change of a few percent may go undetected"), c.warnings[0])
        XCTAssertTrue(c.text.contains("no detectable change"), c.text)
    }

    func testErrorsAreComparedInPercentagePoints() throws {
        var runs = SyntheticRuns(seed: 3)
        let c = try RunComparison(baseRuns: (0..<5).map { _ in runs.report() },
                                  newRuns: (0..<5).map { i in runs.report(errorPercent: 4 + Double(i % 2)) })
        let errors = try change(c, "errors")
        XCTAssertEqual(errors.verdict, .regressed, c.text)
        XCTAssertEqual(errors.method, "welch-difference")
        XCTAssertEqual(errors.change, 4.4, accuracy: 0.05)
        XCTAssertEqual(errors.base, 0)
        XCTAssertTrue(c.text.contains("more errors"), c.text)
        XCTAssertTrue(c.text.contains("+4.40 pp"), c.text)
    }

    func testOneRunPerSideFallsBackToTheRunsOwnSamplesWithAWarning() throws {
        var runs = SyntheticRuns(seed: 5, cv: 0)
        let base = runs.histogramReport(samples: 20_000)
        let slower = try RunComparison(baseRuns: [base], newRuns: [runs.histogramReport(throughput: 0.8, latency: 1.2, samples: 20_000)])
        for figure in ["p50", "p90", "p99"] {
            let latency = try change(slower, figure)
            XCTAssertEqual(latency.method, "histogram-order-statistics")
            XCTAssertEqual(latency.verdict, .regressed, "\(figure): \(slower.text)")
            XCTAssertTrue(latency.low < latency.change && latency.change < latency.high)
        }
        XCTAssertEqual(try change(slower, "throughput").method, "per-second-welch-log-ratio")
        XCTAssertEqual(try change(slower, "throughput").verdict, .regressed)
        XCTAssertEqual(try change(slower, "errors").method, "two-proportion")
        XCTAssertTrue(slower.warnings.contains { $0.hasPrefix("one run per side: the intervals come from within each run") },
                      "\(slower.warnings)")
        XCTAssertTrue(slower.text.contains("warning: one run per side"), slower.text)

        // A run against itself: no change anywhere, and the intervals hold 0.
        let same = try RunComparison(baseRuns: [base], newRuns: [base])
        XCTAssertEqual(same.changes.map(\.verdict), Array(repeating: .noDetectableChange, count: 6), same.text)
        for c in same.changes { XCTAssertTrue(c.low <= 0 && 0 <= c.high, "\(c)") }
    }

    func testOneRunPerSideDoesNotJudgeWithinOneHistogramBucket() throws {
        // 100,000 ns and 100,300 ns fall in one bucket (512 ns wide): every rank of each run reads one value, and
        // the 0.3 % between them is the bucketing's, not a measured change.
        func run(_ ns: UInt64) -> RunResult {
            var h = Histogram()
            h.record(ns, times: 10_000)
            var r = SyntheticRuns.empty(mode: "echo", histogram: h)
            r.requests = 10_000
            return r
        }
        XCTAssertEqual(Histogram.bucketIndex(of: 100_000), Histogram.bucketIndex(of: 100_300))
        let c = try RunComparison(baseRuns: [run(100_000)], newRuns: [run(100_300)])
        for figure in ["p50", "p90", "p99", "p99.9"] {
            XCTAssertEqual(try change(c, figure).verdict, .noDetectableChange, "\(figure): \(c.text)")
        }
        // Two buckets apart is a change.
        XCTAssertEqual(try change(try RunComparison(baseRuns: [run(100_000)], newRuns: [run(101_500)]), "p50").verdict,
                       .regressed)
    }

    func testOneRunAgainstSeveralBorrowsTheOtherSidesSpread() throws {
        var runs = SyntheticRuns(seed: 9, cv: 0.03)
        let c = try RunComparison(baseRuns: [runs.report()], newRuns: (0..<6).map { _ in runs.report(latency: 1.3) })
        XCTAssertEqual(try change(c, "p50").method, "welch-log-ratio")
        XCTAssertEqual(try change(c, "p50").verdict, .regressed, c.text)
        XCTAssertTrue(c.warnings.contains("one run on a side: its run-to-run spread is taken to be the other side's"),
                      "\(c.warnings)")
    }

    func testFiguresARunDoesNotHaveAreNotJudged() throws {
        var runs = SyntheticRuns(seed: 1)
        func idle() -> RunResult {
            var r = runs.report(mode: "idle")
            r.latencyUs = RunResult.Latency(Histogram())
            return r
        }
        let c = try RunComparison(baseRuns: [idle(), idle()], newRuns: [idle(), idle()])
        XCTAssertEqual(c.changes.filter { $0.verdict == .notJudged }.map(\.figure), ["p50", "p90", "p99", "p99.9"])
        XCTAssertTrue(c.text.contains("not judged"), c.text)
    }

    func testReportsThatCannotBeComparedAreRefused() {
        var runs = SyntheticRuns(seed: 2)
        XCTAssertThrowsError(try RunComparison(baseRuns: [runs.report()], newRuns: [runs.report(mode: "http")])) { error in
            XCTAssertTrue("\(error)".contains("different modes (echo, http)"), "\(error)")
        }
        XCTAssertThrowsError(try RunComparison(baseRuns: [], newRuns: [runs.report()]))
        XCTAssertThrowsError(try RunComparison(baseRuns: [runs.report()], newRuns: [runs.report()], confidence: 1.5))
        XCTAssertThrowsError(try RunComparison(base: [Data("{}".utf8)], new: [])) { error in
            XCTAssertTrue("\(error)".hasPrefix("base report 1 is not a loadtest JSON result"), "\(error)")
        }
        var bigger = runs.report()
        bigger.messageSize = 1024
        let mixed = try? RunComparison(baseRuns: [runs.report(), runs.report()], newRuns: [bigger, runs.report()])
        XCTAssertTrue(mixed?.warnings.first?.hasPrefix("the runs differ in their settings (message size: 64 B") == true,
                      "\(mixed?.warnings ?? [])")
    }

    func testThePublicEntryPointReadsReportBytes() throws {
        var runs = SyntheticRuns(seed: 4, cv: 0.02)
        let base = try (0..<5).map { _ in try runs.report().jsonData() }
        let new = try (0..<5).map { _ in try runs.report(latency: 1.25).jsonData() }
        let c = try RunComparison(base: base, new: new, confidence: 0.99)
        XCTAssertEqual(c.confidence, 0.99)
        XCTAssertEqual(c.baseRuns, 5)
        XCTAssertEqual(c.regressions, ["p50", "p90", "p99", "p99.9"], c.text)
        XCTAssertTrue(c.text.contains("99% interval"), c.text)
    }

    func testTheJSONAndTheChartSayWhatTheTableSays() throws {
        var runs = SyntheticRuns(seed: 6, cv: 0.02)
        let c = try RunComparison(baseRuns: (0..<4).map { _ in runs.report() },
                                  newRuns: (0..<4).map { _ in runs.report(throughput: 0.7) })
        let report = CompareReport(c, baseFiles: ["a"], newFiles: ["b"], gate: [.throughput, .p99])
        let decoded = try JSONDecoder().decode(CompareReport.self, from: report.jsonData())
        XCTAssertEqual(decoded, report)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: report.jsonData()) as? [String: Any])
        XCTAssertEqual(object["fail_if"] as? [String], ["throughput", "p99"])
        XCTAssertEqual(object["failed"] as? [String], ["throughput"])
        XCTAssertEqual(decoded.figures.map(\.verdict).first, "regressed")
        XCTAssertEqual(decoded.figures.last?.scale, "percentage_points")
        XCTAssertEqual(decoded.figures.first?.unit, "1/s")

        let svg = CompareChart.render(c)
        XCTAssertTrue(svg.hasPrefix("<svg"), svg)
        XCTAssertTrue(svg.hasSuffix("</svg>\n"))
        for figure in ["throughput", "p50", "p90", "p99", "p99.9"] { XCTAssertTrue(svg.contains(">\(figure)</text>"), figure) }
        XCTAssertEqual(svg.components(separatedBy: "<circle").count - 1, 5, "one point per ratio figure")
        XCTAssertTrue(svg.contains(CompareChart.color(.regressed)), "the slower throughput is drawn red")
        XCTAssertTrue(svg.contains("errors: 0.00% → 0.00%"), svg)
    }
}
