import XCTest
@testable import LoadTest

/// `RunComparison` on many simulated comparisons (fixed seeds): its false alarms stay at the stated rate on
/// equal runs, and the run count the docs recommend finds a 5 % change.
final class CompareSimulationTests: XCTestCase {
    /// How often each figure got a verdict (either way) in `trials` comparisons of equal runs.
    private func falseVerdicts(runs: Int, trials: Int, confidence: Double, seed: UInt64)
        -> (byFigure: [Double], gate: Double) {
        var sim = SyntheticRuns(seed: seed)
        var counts = Array(repeating: 0, count: CompareFigure.allCases.count)
        var gate = 0
        for _ in 0..<trials {
            let base = (0..<runs).map { _ in sim.report(errorPercent: 0.1) }
            let new = (0..<runs).map { _ in sim.report(errorPercent: 0.1) }
            let c = try! RunComparison(baseRuns: base, newRuns: new, confidence: confidence)
            for (i, change) in c.changes.enumerated() where change.verdict != .noDetectableChange { counts[i] += 1 }
            if !c.regressions.isEmpty { gate += 1 }
        }
        return (counts.map { Double($0) / Double(trials) }, Double(gate) / Double(trials))
    }

    func testFalseVerdictsOnEqualRunsStayAtTheStatedRate() {
        // 1,000 comparisons: the rate's standard error is about 0.7 %, so ±2.5 % is well over three of them.
        // The errors figure has no noise of its own in these runs (equal rates): it never gets a verdict.
        for (runs, confidence, seed) in [(5, 0.95, 1 as UInt64), (3, 0.95, 2), (10, 0.99, 3)] {
            let (rates, gate) = falseVerdicts(runs: runs, trials: 1000, confidence: confidence, seed: seed)
            let stated = 1 - confidence
            for (figure, rate) in zip(CompareFigure.allCases, rates) where figure != .errors {
                XCTAssertLessThanOrEqual(rate, stated + 0.025, "\(figure), \(runs) runs at \(confidence)")
                // Not so wide that it never speaks (Welch's interval is a little conservative with few runs).
                XCTAssertGreaterThanOrEqual(rate, stated * 0.3, "\(figure), \(runs) runs at \(confidence)")
            }
            // --fail-if slower on every figure: one side of each figure's interval, five noisy figures.
            XCTAssertLessThanOrEqual(gate, 5 * stated / 2 + 0.025, "the gate, \(runs) runs at \(confidence)")
        }
    }

    /// How often a 5 % lower throughput is found with `runs` per side, in `trials` comparisons.
    private func power(runs: Int, trials: Int, cv: Double, seed: UInt64) -> Double {
        var sim = SyntheticRuns(seed: seed, cv: cv)
        var found = 0
        for _ in 0..<trials {
            let base = (0..<runs).map { _ in sim.report() }
            let new = (0..<runs).map { _ in sim.report(throughput: 0.95) }
            if RunComparison.acrossRuns(.throughput, base, new, confidence: 0.95).verdict == .regressed { found += 1 }
        }
        return Double(found) / Double(trials)
    }

    func testTheRecommendedRunCountFindsAFivePercentChange() {
        // The smallest run count per side that finds a 5 % change in 8 comparisons of 10 when a run's figure
        // varies by 4 % from run to run: the count the docs and the warning recommend.
        var smallest: Int?
        for runs in 2...30 where power(runs: runs, trials: 1000, cv: 0.04, seed: 100 + UInt64(runs)) >= 0.8 {
            smallest = runs
            break
        }
        XCTAssertEqual(smallest, RunComparison.recommendedRuns)
        // Quieter machines need fewer, noisier ones more.
        XCTAssertGreaterThanOrEqual(power(runs: RunComparison.recommendedRuns, trials: 1000, cv: 0.03, seed: 7), 0.95)
        XCTAssertLessThan(power(runs: RunComparison.recommendedRuns, trials: 1000, cv: 0.05, seed: 8), 0.8)

        // The same on a latency percentile, through the whole comparison.
        var sim = SyntheticRuns(seed: 21)
        var found = 0
        for _ in 0..<200 {
            let base = (0..<RunComparison.recommendedRuns).map { _ in sim.report() }
            let new = (0..<RunComparison.recommendedRuns).map { _ in sim.report(latency: 1.05) }
            if try! RunComparison(baseRuns: base, newRuns: new).regressions.contains("p50") { found += 1 }
        }
        XCTAssertGreaterThanOrEqual(Double(found) / 200, 0.7, "p50, \(RunComparison.recommendedRuns) runs per side")
    }

    func testOneRunPerSideMissesRunToRunNoise() {
        // Why one run per side gets a warning: its seconds vary less than whole runs do, so equal builds get
        // a verdict far more often than the stated 5 %.
        var sim = SyntheticRuns(seed: 31)
        var verdicts = 0
        for _ in 0..<300 {
            let c = try! RunComparison(baseRuns: [sim.histogramReport(samples: 10)], newRuns: [sim.histogramReport(samples: 10)])
            if c.changes[0].verdict != .noDetectableChange { verdicts += 1 }
        }
        XCTAssertGreaterThan(Double(verdicts) / 300, 0.3)
    }
}
