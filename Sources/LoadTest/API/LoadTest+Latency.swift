extension LoadTest {
    /// A latency distribution's summary, in microseconds, each percentile within 0.4 % of the exact sample.
    public struct Latency: Sendable, Equatable {
        /// Latencies recorded.
        public let count: UInt64
        /// The smallest.
        public let min: Double
        /// The mean.
        public let mean: Double
        /// The median.
        public let p50: Double
        /// The 90th percentile.
        public let p90: Double
        /// The 99th percentile.
        public let p99: Double
        /// The 99.9th percentile.
        public let p99_9: Double
        /// The 99.99th percentile.
        public let p99_99: Double
        /// The largest.
        public let max: Double

        init(_ latency: RunResult.Latency) {
            count = latency.count
            min = latency.min
            mean = latency.mean
            p50 = latency.p50
            p90 = latency.p90
            p99 = latency.p99
            p99_9 = latency.p99_9
            p99_99 = latency.p99_99
            max = latency.max
        }
    }

    /// The window's latencies, every one recorded, in log-linear buckets (HdrHistogram's layout, 128 per
    /// power of two): percentiles at any point, and buckets to plot or merge.
    public struct LatencyHistogram: Sendable, Equatable {
        /// One non-empty bucket: the latencies from ``lowest`` to ``lowest`` + ``width`` (exclusive), ns.
        public struct Bucket: Sendable, Equatable {
            /// The smallest latency the bucket holds, ns.
            public let lowest: UInt64
            /// How many nanoseconds it spans.
            public let width: UInt64
            /// Latencies recorded in it.
            public let count: UInt64
        }

        let histogram: Histogram

        init(_ histogram: Histogram) { self.histogram = histogram }

        /// Latencies recorded.
        public var count: UInt64 { histogram.count }
        /// The latency below which `percent` per cent of them lie, ns (0 for an empty histogram).
        public func percentile(_ percent: Double) -> UInt64 { histogram.percentile(percent) }
        /// The non-empty buckets, shortest latencies first.
        public var buckets: [Bucket] {
            histogram.nonEmptyBuckets.map {
                Bucket(lowest: Histogram.lowestValue(ofBucket: $0.index), width: Histogram.width(ofBucket: $0.index),
                       count: $0.count)
            }
        }
    }
}
