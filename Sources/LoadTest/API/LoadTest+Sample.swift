extension LoadTest {
    /// One second of a run's load: what ``Report/timeline`` holds, and what the progress handler of
    /// ``LoadTest/run(_:progress:)`` is given as each second ends.
    public struct Sample: Sendable, Equatable {
        /// Seconds since the load started, at the end of this sample.
        public let elapsed: Double
        /// Whether it lies in the warm-up, before the measuring window.
        public let isWarmup: Bool
        /// Requests completed per second over the sample.
        public let requestsPerSecond: Double
        /// MiB received per second over the sample.
        public let mibPerSecond: Double
        /// Open loop: the rate asked for over the sample; nil in closed loop.
        public let targetRate: Double?
        /// Connections open at its end.
        public let connections: Int
        /// Errors counted so far, the warm-up's included.
        public let errors: UInt64

        init(_ sample: RunResult.Sample) {
            elapsed = sample.t
            isWarmup = sample.warmup
            requestsPerSecond = sample.requestsPerSecond
            mibPerSecond = sample.mibPerSecond
            targetRate = sample.targetRate
            connections = sample.connections
            errors = sample.errors
        }
    }
}
