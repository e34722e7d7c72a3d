extension LoadTest {
    /// Whether the runs `new` are faster or slower than the runs `base` beyond the noise, figure by figure
    /// (throughput, p50 to p99.9, errors), at `confidence`: what `loadtest compare` prints. Several runs per
    /// side measure the run-to-run noise; one run per side leaves it out (``RunComparison/warnings`` says so).
    ///
    /// ```swift
    /// let comparison = try LoadTest.compare(base: before, new: after)
    /// XCTAssert(comparison.regressions.isEmpty, comparison.text)
    /// ```
    ///
    /// Throws ``RunComparison/InputError`` for a side without reports, reports of different modes, or a
    /// confidence outside 0.5 to 0.9999.
    public static func compare(
        base: [Report], new: [Report], confidence: Double = 0.95
    ) throws(RunComparison.InputError) -> RunComparison {
        try RunComparison(baseRuns: base.map(\.result), newRuns: new.map(\.result), confidence: confidence)
    }
}
