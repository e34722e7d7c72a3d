/// A log-linear latency histogram in the manner of HdrHistogram: exact below 128, and above that each power
/// of two split into 128 equal sub-buckets.
///
/// Precision: a bucket is never wider than 1/128 of the values in it, and a percentile is reported as the
/// middle of its bucket (clamped to the recorded minimum and maximum), so a reported percentile lies within
/// ±1/256 (0.4 %) of the exact sample at that rank. That is better than two significant digits, for any
/// `UInt64` value (nanoseconds up to centuries); recording is a count-leading-zeros and an increment.
///
/// ```swift
/// var histogram = Histogram()
/// histogram.record(12_345)          // ns
/// histogram.percentile(99)          // ≈ 12_345
/// ```
package struct Histogram: Sendable, Equatable {
    /// Bits of linear sub-bucketing per power of two: 2^7 = 128 sub-buckets.
    package static let subBucketBits = 7
    static let subBucketCount = 1 << subBucketBits
    /// Enough buckets for every `UInt64`.
    package static let bucketCount = (64 - subBucketBits + 1) * subBucketCount

    /// Counts per bucket (see ``bucketIndex(of:)``); allocated on first record.
    package private(set) var counts: [UInt64] = []
    /// Values recorded.
    package private(set) var count: UInt64 = 0
    /// The smallest value recorded (`UInt64.max` when empty).
    package private(set) var min: UInt64 = .max
    /// The largest value recorded (0 when empty).
    package private(set) var max: UInt64 = 0
    /// The sum of the values recorded (wrapping; for the mean).
    package private(set) var sum: UInt64 = 0

    /// An empty histogram.
    package init() {}

    /// A histogram of `count` values with these buckets (``bucketCount`` of them) and totals.
    init(counts: [UInt64], count: UInt64, min: UInt64, max: UInt64, sum: UInt64) {
        precondition(counts.count == Self.bucketCount, "a histogram has \(Self.bucketCount) buckets")
        self.counts = counts
        self.count = count
        self.min = min
        self.max = max
        self.sum = sum
    }

    /// The bucket a value falls in.
    @inline(__always)
    package static func bucketIndex(of value: UInt64) -> Int {
        if value < UInt64(subBucketCount) { return Int(value) }
        let msb = 63 - value.leadingZeroBitCount
        let shift = msb - subBucketBits
        return (shift + 1) * subBucketCount + Int(value >> UInt64(shift)) - subBucketCount
    }

    /// The smallest value in bucket `index`.
    package static func lowestValue(ofBucket index: Int) -> UInt64 {
        if index < subBucketCount { return UInt64(index) }
        let shift = index / subBucketCount - 1
        return UInt64(index % subBucketCount + subBucketCount) << UInt64(shift)
    }

    /// How many values bucket `index` spans.
    package static func width(ofBucket index: Int) -> UInt64 {
        index < subBucketCount ? 1 : 1 << UInt64(index / subBucketCount - 1)
    }

    /// Records `value`, `times` times.
    @inline(__always)
    package mutating func record(_ value: UInt64, times: UInt64 = 1) {
        if counts.isEmpty { counts = Array(repeating: 0, count: Self.bucketCount) }
        counts[Self.bucketIndex(of: value)] &+= times
        count &+= times
        sum &+= value &* times
        if value < min { min = value }
        if value > max { max = value }
    }

    /// Adds every value of `other`.
    package mutating func merge(_ other: Histogram) {
        guard other.count > 0 else { return }
        if counts.isEmpty { counts = Array(repeating: 0, count: Self.bucketCount) }
        for (i, c) in other.counts.enumerated() where c != 0 { counts[i] &+= c }
        count &+= other.count
        sum &+= other.sum
        min = Swift.min(min, other.min)
        max = Swift.max(max, other.max)
    }

    /// Forgets every value.
    package mutating func reset() {
        self = Histogram()
    }

    /// The mean of the values, 0 when empty.
    package var mean: Double { count == 0 ? 0 : Double(sum) / Double(count) }

    /// The value at percentile `p` (0...100): the sample of rank ⌈p/100 · count⌉ (at least 1), reported as
    /// the middle of its bucket, clamped to ``min``…``max``. 0 when empty; 100 gives ``max`` exactly.
    package func percentile(_ p: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        if p >= 100 { return max }
        let exactRank = (Swift.max(0, p) / 100 * Double(count)).rounded(.up)
        let rank = Swift.max(1, UInt64(Swift.min(exactRank, Double(count))))
        var seen: UInt64 = 0
        for (i, c) in counts.enumerated() where c != 0 {
            seen += c
            if seen >= rank {
                let middle = Self.lowestValue(ofBucket: i) + (Self.width(ofBucket: i) - 1) / 2
                return Swift.min(Swift.max(middle, min), max)
            }
        }
        return max
    }

    /// The non-empty buckets as `(index, count)`, in order: the histogram's compact form for JSON.
    package var nonEmptyBuckets: [(index: Int, count: UInt64)] {
        counts.enumerated().compactMap { $0.element == 0 ? nil : ($0.offset, $0.element) }
    }

    /// Rebuilds a histogram from its compact form. Returns nil if an index is out of range or the sub-bucket
    /// precision differs from this build's.
    package init?(buckets: [(index: Int, count: UInt64)], min: UInt64, max: UInt64, sum: UInt64,
                 subBucketBits: Int = Histogram.subBucketBits) {
        guard subBucketBits == Self.subBucketBits else { return nil }
        var counts = Array(repeating: UInt64(0), count: Self.bucketCount)
        var total: UInt64 = 0
        for (index, c) in buckets {
            guard index >= 0, index < Self.bucketCount else { return nil }
            counts[index] &+= c
            total &+= c
        }
        self.init()
        guard total > 0 else { return }
        self.counts = counts
        self.count = total
        self.min = min
        self.max = max
        self.sum = sum
    }
}
