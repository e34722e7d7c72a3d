import FoundationEssentials
import XCTest
@testable import LoadTest

final class RunResultTests: XCTestCase {
    private func result(seed: UInt64, requests: Int, errors: [ErrorKind: UInt64] = [:]) -> RunResult {
        var rng = SplitMix64(state: seed)
        var histogram = Histogram()
        for _ in 0..<requests { histogram.record(10_000 + rng.next() % 90_000) }
        var counts = ErrorCounts()
        for (kind, n) in errors { counts.add(kind, n) }
        return RunResult(
            mode: "echo", target: "127.0.0.1:9000", connections: 100, connectionsEstablished: 100,
            connectionsFailed: 0, connectionsOpen: 100, messageSize: 64, pipeline: 1, targetRate: nil, loops: 1,
            durationSeconds: 2, warmupSeconds: 1, requests: UInt64(requests), requestsPerSecond: Double(requests) / 2,
            bytes: UInt64(requests * 64), mibPerSecond: Double(requests * 64) / 2 / 1_048_576,
            errors: .init(counts, first: errors.isEmpty ? nil : "boom"), latencyUs: .init(histogram),
            histogram: .init(histogram),
            timeline: [.init(t: 1, requestsPerSecond: 10, mibPerSecond: 0.1, connections: 100, errors: 0, warmup: true),
                       .init(t: 2, requestsPerSecond: 20, mibPerSecond: 0.2, connections: 100, errors: 0, warmup: false)])
    }

    func testJSONRoundTrip() throws {
        let original = result(seed: 1, requests: 20_000, errors: [.reset: 2, .mismatch: 1])
        let data = try original.jsonData()
        let decoded = try RunResult.decode(data)
        XCTAssertEqual(decoded, original)
        XCTAssertEqual(decoded.latencyHistogram.count, 20_000)
    }

    func testJSONHasTheDocumentedTopLevelKeys() throws {
        let data = try result(seed: 2, requests: 1000, errors: [.refused: 3]).jsonData()
        let text = String(decoding: data, as: UTF8.self)
        for key in ["\"requests_per_second\"", "\"connections\"", "\"errors\"", "\"latency_us\"", "\"p50\"", "\"p90\"",
                    "\"p99\"", "\"p99_9\"", "\"p99_99\"", "\"max\"", "\"histogram\"", "\"buckets\"", "\"by_kind\"",
                    "\"refused\"", "\"timeline\""] {
            XCTAssertTrue(text.contains(key), "missing \(key)")
        }
    }

    func testMergeAddsCountsAndMergesHistograms() throws {
        let a = result(seed: 3, requests: 10_000, errors: [.reset: 1])
        let b = result(seed: 4, requests: 30_000, errors: [.reset: 2, .timeout: 5])
        let merged = try RunResult.merge([a, b])
        XCTAssertEqual(merged.requests, 40_000)
        XCTAssertEqual(merged.requestsPerSecond, 20_000)
        XCTAssertEqual(merged.connections, 200)
        XCTAssertEqual(merged.sources, 2)
        XCTAssertEqual(merged.errors.total, 8)
        XCTAssertEqual(merged.errors.byKind, ["reset": 3, "timeout": 5])
        var expected = a.latencyHistogram
        expected.merge(b.latencyHistogram)
        XCTAssertEqual(merged.latencyHistogram, expected)
        XCTAssertEqual(merged.latencyUs, RunResult.Latency(expected))
        XCTAssertEqual(merged.timeline.map(\.requestsPerSecond), [20, 40])
        // Merging through JSON gives the same thing.
        let viaJSON = try RunResult.merge([RunResult.decode(a.jsonData()), RunResult.decode(b.jsonData())])
        XCTAssertEqual(viaJSON, merged)
        // And a merged result merges again.
        XCTAssertEqual(try RunResult.merge([merged, a]).sources, 3)
    }

    func testMergeRejectsMismatchedModes() {
        var other = result(seed: 5, requests: 10)
        other.mode = "http"
        XCTAssertThrowsError(try RunResult.merge([result(seed: 6, requests: 10), other]))
        XCTAssertThrowsError(try RunResult.merge([]))
    }

    func testDecodeRejectsGarbage() {
        XCTAssertThrowsError(try RunResult.decode(Data("{\"mode\": 3}".utf8)))
        XCTAssertThrowsError(try RunResult.decode(Data("not json".utf8)))
    }

    func testReportAndSVGRender() {
        let r = result(seed: 7, requests: 5000, errors: [.closed: 1])
        let text = ReportText.report(r)
        XCTAssertTrue(text.contains("requests/s"))
        XCTAssertTrue(text.contains("p99.99"))
        XCTAssertTrue(text.contains("closed 1"))
        let svg = SVGChart.render(r)
        XCTAssertTrue(svg.hasPrefix("<svg"))
        XCTAssertTrue(svg.hasSuffix("</svg>\n"))
        XCTAssertTrue(svg.contains("<polyline"))
        XCTAssertTrue(SVGChart.render(result(seed: 8, requests: 0)).contains("no latency samples"))
    }

    func testNumberFormatting() {
        XCTAssertEqual(ReportText.grouped(0), "0")
        XCTAssertEqual(ReportText.grouped(1_234_567), "1,234,567")
        XCTAssertEqual(ReportText.fixed(1234.5678, 2), "1,234.57")
        XCTAssertEqual(ReportText.fixed(-0.5, 1), "-0.5")
        XCTAssertEqual(ReportText.latency(us: 42.14), "42.1 µs")
        XCTAssertEqual(ReportText.latency(us: 3200), "3.20 ms")
        XCTAssertEqual(SVGChart.niceCeiling(730), 1000)
        XCTAssertEqual(SVGChart.niceCeiling(130), 200)
    }
}
