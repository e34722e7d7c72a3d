import XCTest
@testable import LoadTest

/// A small deterministic generator (SplitMix64), so the samples are the same on every run.
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

final class HistogramTests: XCTestCase {
    /// The exact percentile the histogram approximates: the sample of rank ⌈p/100 · n⌉ (at least 1).
    private func exactPercentile(_ sorted: [UInt64], _ p: Double) -> UInt64 {
        let rank = max(1, Int((p / 100 * Double(sorted.count)).rounded(.up)))
        return sorted[min(rank, sorted.count) - 1]
    }

    /// The documented precision: within 1/256 of the exact value (exact below 128).
    private func assertClose(_ reported: UInt64, _ exact: UInt64, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        let tolerance = exact < 128 ? 0 : Double(exact) / 256 + 1
        XCTAssertLessThanOrEqual(abs(Double(reported) - Double(exact)), tolerance,
                                 "\(label): reported \(reported), exact \(exact)", file: file, line: line)
    }

    private func check(_ samples: [UInt64], file: StaticString = #filePath, line: UInt = #line) {
        var histogram = Histogram()
        for s in samples { histogram.record(s) }
        let sorted = samples.sorted()
        XCTAssertEqual(histogram.count, UInt64(samples.count), file: file, line: line)
        XCTAssertEqual(histogram.min, sorted.first, file: file, line: line)
        XCTAssertEqual(histogram.max, sorted.last, file: file, line: line)
        for p in [0.0, 1, 25, 50, 75, 90, 99, 99.9, 99.99, 100] {
            assertClose(histogram.percentile(p), exactPercentile(sorted, p), "p\(p)", file: file, line: line)
        }
        XCTAssertEqual(histogram.percentile(100), sorted.last, file: file, line: line)
    }

    func testSmallValuesAreExact() {
        var histogram = Histogram()
        for v in UInt64(0)..<128 { histogram.record(v) }
        for v in UInt64(0)..<128 {
            XCTAssertEqual(Histogram.bucketIndex(of: v), Int(v))
        }
        XCTAssertEqual(histogram.percentile(50), 63)
        XCTAssertEqual(histogram.percentile(100), 127)
        XCTAssertEqual(histogram.percentile(0), 0)
    }

    func testUniformOneToTenThousand() {
        check(Array(1...10_000))
    }

    func testLogUniformNanosecondsToMinutes() {
        // Latencies spread over 1 µs … 10 min, as a long tail would be.
        var rng = SplitMix64(state: 42)
        let samples = (0..<200_000).map { _ -> UInt64 in
            let exponent = Double(rng.next() % 1_000_000) / 1_000_000 * 8.78  // 10^3 … 10^11.78 ns
            return UInt64(pow(10, 3 + exponent))
        }
        check(samples)
    }

    func testTailOfATypicalLatencyDistribution() {
        // Mostly 20-40 µs, one in a thousand near 5 ms, one in 100,000 at 200 ms: p99.9 and p99.99 must see them.
        var rng = SplitMix64(state: 7)
        var samples: [UInt64] = []
        for i in 0..<100_000 {
            if i % 100_000 == 99_999 {
                samples.append(200_000_000 + rng.next() % 1000)
            } else if i % 1000 == 999 {
                samples.append(5_000_000 + rng.next() % 100_000)
            } else {
                samples.append(20_000 + rng.next() % 20_000)
            }
        }
        check(samples)
        var histogram = Histogram()
        for s in samples { histogram.record(s) }
        XCTAssertGreaterThan(histogram.percentile(99.95), 4_900_000)
        XCTAssertLessThan(histogram.percentile(99), 40_200)
    }

    func testBucketsTileTheRange() {
        // Every bucket starts where the previous one ended, and is at most 1/128 of its values wide.
        for index in 1..<Histogram.bucketCount {
            let low = Histogram.lowestValue(ofBucket: index)
            let previousEnd = Histogram.lowestValue(ofBucket: index - 1) &+ Histogram.width(ofBucket: index - 1)
            XCTAssertEqual(low, previousEnd, "bucket \(index)")
            XCTAssertEqual(Histogram.bucketIndex(of: low), index)
            if index >= 128 { XCTAssertLessThanOrEqual(Histogram.width(ofBucket: index), low / 128) }
            if index == Histogram.bucketCount - 1 { XCTAssertEqual(low &+ Histogram.width(ofBucket: index), 0) }  // wraps at 2^64
        }
        XCTAssertEqual(Histogram.bucketIndex(of: .max), Histogram.bucketCount - 1)
    }

    func testExtremeValues() {
        var histogram = Histogram()
        histogram.record(.max)
        histogram.record(0)
        XCTAssertEqual(histogram.max, .max)
        XCTAssertEqual(histogram.min, 0)
        XCTAssertEqual(histogram.percentile(100), .max)
        XCTAssertEqual(histogram.percentile(50), 0)
    }

    func testEmpty() {
        let histogram = Histogram()
        XCTAssertEqual(histogram.count, 0)
        XCTAssertEqual(histogram.percentile(50), 0)
        XCTAssertEqual(histogram.percentile(100), 0)
        XCTAssertEqual(histogram.mean, 0)
        XCTAssertTrue(histogram.nonEmptyBuckets.isEmpty)
    }

    func testMergeEqualsRecordingEverything() {
        var rng = SplitMix64(state: 99)
        var a = Histogram(), b = Histogram(), all = Histogram()
        for i in 0..<50_000 {
            let v = rng.next() % 10_000_000
            if i % 3 == 0 { a.record(v) } else { b.record(v) }
            all.record(v)
        }
        var merged = a
        merged.merge(b)
        XCTAssertEqual(merged, all)
        var intoEmpty = Histogram()
        intoEmpty.merge(all)
        XCTAssertEqual(intoEmpty, all)
        merged.merge(Histogram())
        XCTAssertEqual(merged, all)
    }

    func testCompactFormRoundTrips() {
        var rng = SplitMix64(state: 5)
        var histogram = Histogram()
        for _ in 0..<10_000 { histogram.record(rng.next() % 1_000_000_000) }
        let rebuilt = Histogram(buckets: histogram.nonEmptyBuckets, min: histogram.min, max: histogram.max, sum: histogram.sum)
        XCTAssertEqual(rebuilt, histogram)
        XCTAssertNil(Histogram(buckets: [(Histogram.bucketCount, 1)], min: 0, max: 0, sum: 0))
        XCTAssertNil(Histogram(buckets: [(1, 1)], min: 1, max: 1, sum: 1, subBucketBits: 5))
    }
}
