import XCTest
@testable import LoadTest

/// The loop's recorder reads out as the ``Histogram`` recording the same values would be, and stays its own:
/// a read-out kept while recording goes on does not change.
final class HistogramRecorderTests: XCTestCase {
    func testReadsOutAsTheHistogramOfTheSameValues() {
        var rng = SplitMix64(state: 17)
        var recorder = HistogramRecorder()
        var histogram = Histogram()
        for _ in 0..<20_000 {
            let value = rng.next() >> UInt64(rng.next() % 64)  // every magnitude, 0 and UInt64.max's bucket too
            recorder.record(value)
            histogram.record(value)
        }
        recorder.record(.max)
        histogram.record(.max)
        XCTAssertEqual(recorder.histogram, histogram)
    }

    func testNothingRecordedReadsOutEmpty() {
        let recorder = HistogramRecorder()
        XCTAssertEqual(recorder.histogram, Histogram())
        XCTAssertEqual(recorder.histogram.count, 0)
    }

    func testAReadOutIsACopy() {
        var recorder = HistogramRecorder()
        recorder.record(5)
        let first = recorder.histogram
        recorder.record(1_000_000)
        XCTAssertEqual(first.count, 1)
        XCTAssertEqual(first.max, 5)
        XCTAssertEqual(recorder.histogram.count, 2)
        XCTAssertEqual(recorder.histogram.max, 1_000_000)
    }
}
