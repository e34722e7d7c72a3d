/// How late a loop ran work against when it was due, as a log-linear histogram of nanoseconds.
///
/// Eight linear buckets per power of two (so a bucket is at most 12.5% of its values wide), from 0 ns to
/// 2^40 ns (about 18 minutes; longer lags fall in the last bucket): 304 fixed buckets, so recording a
/// sample is an index computation and a store, never an allocation. Read through ``LoopMetrics/lag``.
///
/// ```swift
/// let lag = loop.metrics.lag
/// print(lag.count, lag.percentile(0.99), lag.maximum)
/// ```
public struct LagHistogram: Sendable, Equatable {
    /// Samples per bucket, ``bucketCount`` of them; bucket `i` holds values from
    /// ``lowerBound(ofBucket:)`` up to the next bucket's lower bound.
    public internal(set) var buckets: [UInt64]
    /// Samples recorded.
    public internal(set) var count: UInt64
    /// The sum of every sample, in nanoseconds (for a mean, or Prometheus' `_sum`).
    public internal(set) var sumNanoseconds: UInt64
    /// The largest sample, in nanoseconds.
    public internal(set) var maxNanoseconds: UInt64

    /// An empty histogram.
    public init() {
        buckets = Array(repeating: 0, count: Self.bucketCount)
        count = 0
        sumNanoseconds = 0
        maxNanoseconds = 0
    }

    /// Linear steps per power of two, as a bit count (8 steps).
    static var subBits: Int { 3 }
    /// The largest power of two with buckets of its own; larger values go to the last bucket.
    static var topExponent: Int { 39 }
    /// The number of buckets.
    public static var bucketCount: Int { (topExponent - subBits + 2) << subBits }

    /// The bucket of `nanoseconds`: the value itself below 8, then 8 buckets per power of two.
    @inline(__always)
    static func bucket(of nanoseconds: UInt64) -> Int {
        let steps = UInt64(1) << subBits
        if nanoseconds < steps { return Int(nanoseconds) }
        let exponent = 63 - nanoseconds.leadingZeroBitCount
        guard exponent <= topExponent else { return bucketCount - 1 }
        let sub = Int(truncatingIfNeeded: nanoseconds >> UInt64(exponent - subBits)) & Int(steps - 1)
        return (exponent - subBits + 1) << subBits | sub
    }

    /// The smallest value (ns) bucket `index` holds.
    public static func lowerBound(ofBucket index: Int) -> UInt64 {
        let steps = 1 << subBits
        if index < steps { return UInt64(index) }
        let exponent = index >> subBits + subBits - 1
        let sub = index & (steps - 1)
        return UInt64(steps + sub) << UInt64(exponent - subBits)
    }

    /// The value (ns) at or below which a fraction `quantile` (0...1) of the samples lie, to the bucket's
    /// precision: the upper end of the bucket holding that rank, never more than ``maxNanoseconds``. 0 when
    /// the histogram is empty.
    public func percentileNanoseconds(_ quantile: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        let rank = max(1, UInt64((min(max(quantile, 0), 1) * Double(count)).rounded(.up)))
        var seen: UInt64 = 0
        for index in buckets.indices {
            seen &+= buckets[index]
            if seen >= rank {
                let upper = index + 1 < Self.bucketCount ? Self.lowerBound(ofBucket: index + 1) - 1 : maxNanoseconds
                return min(upper, maxNanoseconds)
            }
        }
        return maxNanoseconds
    }

    /// ``percentileNanoseconds(_:)`` as a `Duration`.
    public func percentile(_ quantile: Double) -> Duration {
        .nanoseconds(Int64(clamping: percentileNanoseconds(quantile)))
    }

    /// The largest sample as a `Duration`.
    public var maximum: Duration { .nanoseconds(Int64(clamping: maxNanoseconds)) }

    /// The samples recorded after `earlier` (a snapshot of the same loop taken before this one); the largest
    /// sample stays this snapshot's, since a maximum cannot be subtracted.
    public func since(_ earlier: LagHistogram) -> LagHistogram {
        var result = self
        for index in buckets.indices { result.buckets[index] = buckets[index] &- earlier.buckets[index] }
        result.count = count &- earlier.count
        result.sumNanoseconds = sumNanoseconds &- earlier.sumNanoseconds
        return result
    }

    /// Adds `other`'s samples to these (a group's loops summed).
    mutating func add(_ other: LagHistogram) {
        for index in buckets.indices { buckets[index] &+= other.buckets[index] }
        count &+= other.count
        sumNanoseconds &+= other.sumNanoseconds
        maxNanoseconds = Swift.max(maxNanoseconds, other.maxNanoseconds)
    }
}
