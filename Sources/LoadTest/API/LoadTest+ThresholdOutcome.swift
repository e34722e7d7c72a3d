extension LoadTest {
    /// Whether one pass/fail criterion (``Configuration/thresholds``) held in a run.
    public struct ThresholdOutcome: Sendable, Equatable {
        /// The criterion as written (`p99<10ms`).
        public let threshold: String
        /// The run's figure, in ``unit``; nil when the run did not measure it (which fails the criterion).
        public let value: Double?
        /// The limit, in ``unit``.
        public let limit: Double
        /// `us`, `per_second`, `count` or `percent`.
        public let unit: String
        /// Whether it held.
        public let passed: Bool

        init(_ outcome: RunResult.ThresholdOutcome) {
            threshold = outcome.threshold
            value = outcome.value
            limit = outcome.limit
            unit = outcome.unit
            passed = outcome.passed
        }
    }
}
