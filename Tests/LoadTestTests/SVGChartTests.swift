import XCTest
@testable import LoadTest

/// Which panels each mode gets, and what a chart says about the run it shows.
final class SVGChartTests: XCTestCase {
    private func result(mode: String, latencies: [UInt64] = [], rss: Double? = nil) -> RunResult {
        var h = Histogram()
        for v in latencies { h.record(v) }
        var r = RunResult(mode: mode, target: "127.0.0.1:9", connections: 1, connectionsEstablished: 1, connectionsFailed: 0,
                          connectionsOpen: 1, messageSize: mode == "echo" ? 64 : nil, pipeline: nil, targetRate: nil, loops: 1,
                          durationSeconds: 2, warmupSeconds: 1, requests: UInt64(latencies.count), requestsPerSecond: 1,
                          bytes: 0, mibPerSecond: 0, errors: RunResult.Errors(ErrorCounts(), first: nil),
                          latencyUs: RunResult.Latency(h), histogram: RunResult.HistogramData(h),
                          timeline: (1...3).map { RunResult.Sample(t: Double($0), requestsPerSecond: 10, mibPerSecond: 1, connections: 1, errors: 0, warmup: $0 == 1) })
        if let rss { for i in r.timeline.indices { r.timeline[i].serverRSSMiB = rss } }
        r.windowStart = 1_795_521_600
        r.id = "run-a"
        return r
    }

    func testPanelsFollowTheMode() {
        XCTAssertEqual(SVGChart.panels(result(mode: "idle")), [.connections])
        XCTAssertEqual(SVGChart.panels(result(mode: "idle", rss: 12)), [.connections, .serverMemory])
        XCTAssertEqual(SVGChart.panels(result(mode: "stream")), [.throughput], "a closed-loop stream has no latencies")
        XCTAssertEqual(SVGChart.panels(result(mode: "stream", latencies: [1000])), [.latency, .throughput])
        XCTAssertEqual(SVGChart.panels(result(mode: "echo", latencies: [1000])), [.latency, .throughput])
        let idle = SVGChart.render(result(mode: "idle", rss: 12))
        XCTAssertTrue(idle.contains("Open connections"))
        XCTAssertTrue(idle.contains("Server memory (resident MiB)"))
        XCTAssertFalse(idle.contains("Latency"))
    }

    func testChartsSayWhichRunAndUseFittingUnits() {
        let echo = SVGChart.render(result(mode: "echo", latencies: [20_000_000, 30_000_000]))
        XCTAssertTrue(echo.contains("loadtest echo → 127.0.0.1:9 [run-a]"), echo)
        XCTAssertTrue(echo.contains("1 connection, 64 B, closed loop, 2.0 s measured, 2026-11-24 12:00:00 UTC"), echo)
        XCTAssertTrue(echo.contains("Latency by percentile (ms)"), "30 ms reads as ms, not 30,000 µs")
        XCTAssertFalse(echo.contains(">20,000<"))
        XCTAssertTrue(SVGChart.render(result(mode: "echo", latencies: [20_000])).contains("Latency by percentile (µs)"))
        XCTAssertTrue(SVGChart.render(result(mode: "connect", latencies: [1])).contains("Throughput over time (connections/s)"))
        XCTAssertEqual(SVGChart.utcDate(951_868_799), "2000-02-29 23:59:59 UTC")
    }

    func testAnEmptyPanelHasNoStrayAxisLabels() {
        let svg = SVGChart.render(result(mode: "echo"))
        XCTAssertTrue(svg.contains("no latency samples"))
        XCTAssertFalse(svg.contains(">99.9%<"), "no percentile ticks on an empty plot")
    }
}
