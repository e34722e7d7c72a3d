import Foundation
import SharedTestSupport
import XCTest
@testable import LoadTest

/// What a run hands to other tools: the HdrHistogram interval log and the Prometheus endpoint, the latter
/// read with a real HTTP client (curl).
final class ToolOutputTests: XCTestCase {
    func testHdrLogHasOneDecodableIntervalPerSecondSummingToTheWindow() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lt-\(getpid()).hlog").path
        defer { unlink(path) }
        let result = try shortRun(.echo, port: server.port, connections: 4, duration: 2.5) {
            $0.hdrLogPath = path
            $0.runID = "log-test"
        }
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertTrue(lines[0].hasPrefix("#[loadtest echo 127.0.0.1:\(server.port), 4 connections, id log-test; latency in ns"), lines[0])
        XCTAssertEqual(lines[1], "#[Histogram log format version 1.3]")
        let startTime = try XCTUnwrap(Double(lines[2].dropFirst("#[StartTime: ".count).prefix { $0 != " " }))
        XCTAssertEqual(startTime, try XCTUnwrap(result.windowStart), accuracy: 0.002)
        XCTAssertEqual(lines[3], "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"")
        let intervals = Array(lines[4...])
        XCTAssertEqual(intervals.count, 3, "1 s, 1 s and 0.5 s: \(intervals)")
        var total: UInt64 = 0
        var expectedStart = 0.0
        for line in intervals {
            let fields = line.split(separator: ",").map(String.init)
            XCTAssertEqual(fields.count, 4)
            let start = try XCTUnwrap(Double(fields[0])), length = try XCTUnwrap(Double(fields[1]))
            XCTAssertEqual(start, expectedStart, accuracy: 0.0015)
            expectedStart = start + length
            let decoded = HdrHistogramEncodingTests.decode(
                try HdrHistogramEncodingTests.unwrap(Array(try XCTUnwrap(Data(base64Encoded: fields[3])))))
            total += decoded.counts.reduce(0, +)
            // Interval_Max (ms) is the interval's largest latency.
            let last = try XCTUnwrap(decoded.counts.lastIndex { $0 != 0 })
            let maxMs = try XCTUnwrap(Double(fields[2]))
            XCTAssertEqual(Double(Histogram.lowestValue(ofBucket: last)) / 1e6, maxMs, accuracy: maxMs / 100 + 0.001)
        }
        XCTAssertEqual(expectedStart, result.durationSeconds, accuracy: 0.01)
        XCTAssertEqual(total, result.requests, "the intervals add up to the window")
    }

    func testMetricsEndpointServesPrometheusTextDuringTheRun() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let lines = LineCollector()
        var config = LoadConfig(mode: .echo)
        config.port = server.port
        config.connections = 4
        config.loops = 1
        config.duration = 30  // ended by interrupt() once the endpoint has been read
        config.warmup = 0
        config.metrics = MetricsAddress(host: "127.0.0.1", port: 0)
        config.runID = "m1"
        let runner = LoadRunner(config: config, output: { lines.add($0) })
        let run = BackgroundRun(runner)
        let finished = run.finished, outcome = run.outcome
        defer {
            runner.interrupt()
            XCTAssertEqual(finished.wait(timeout: .now() + 30), .success)
        }
        let announced = try XCTUnwrap(lines.wait(for: "metrics at http://127.0.0.1:", seconds: 20))
        let url = String(announced.split(separator: " ").last!)
        // A progress line means the counters have been published once at least.
        XCTAssertNotNil(lines.wait(for: "req/s", seconds: 20))

        let curl = try TestTool.path("curl")
        let scrape = try ChildProcess.run(curl, ["-sS", "-i", url], seconds: 20)
        XCTAssertEqual(scrape.status, 0, scrape.error)
        let text = scrape.output
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 OK\r\n"), text)
        XCTAssertTrue(text.contains("Content-Type: text/plain; version=0.0.4"), text)
        XCTAssertTrue(text.contains("# TYPE loadtest_requests_total counter"), text)
        let requests = text.split(separator: "\n").first { $0.hasPrefix("loadtest_requests_total{mode=\"echo\",id=\"m1\"} ") }
        XCTAssertGreaterThan(UInt64(try XCTUnwrap(requests).split(separator: " ").last!) ?? 0, 0, text)
        XCTAssertTrue(text.contains("loadtest_connections_open{mode=\"echo\",id=\"m1\"} 4\n"), text)
        XCTAssertTrue(text.contains("loadtest_errors_total{mode=\"echo\",id=\"m1\",kind=\"refused\"} 0\n"), text)
        XCTAssertTrue(text.contains("# TYPE loadtest_latency_seconds histogram"), text)
        XCTAssertTrue(text.contains("loadtest_latency_seconds_bucket{mode=\"echo\",id=\"m1\",le=\"+Inf\"} "), text)
        // The buckets are cumulative: never decreasing, and the last equals the count.
        let buckets = text.split(separator: "\n").filter { $0.hasPrefix("loadtest_latency_seconds_bucket") }
            .compactMap { UInt64($0.split(separator: " ").last!) }
        XCTAssertEqual(buckets.count, MetricsEndpoint.bucketBounds.count + 1)
        XCTAssertEqual(buckets, buckets.sorted())
        let count = text.split(separator: "\n").first { $0.hasPrefix("loadtest_latency_seconds_count") }
        XCTAssertEqual(count.flatMap { UInt64($0.split(separator: " ").last!) }, buckets.last)

        let other = try ChildProcess.run(curl, ["-sS", "-o", "/dev/null", "-w", "%{http_code}", url.replacingOccurrences(of: "/metrics", with: "/other")])
        XCTAssertEqual(other.output, "404")
        let post = try ChildProcess.run(curl, ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", url])
        XCTAssertEqual(post.output, "405")

        runner.interrupt()
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success)
        finished.signal()  // for the deferred wait
        let result = try XCTUnwrap(outcome.value).get()
        XCTAssertGreaterThan(result.requests, 0)
        // The endpoint lives as long as the run.
        let after = try ChildProcess.run(curl, ["-sS", "-o", "/dev/null", url])
        XCTAssertNotEqual(after.status, 0, "the endpoint closes with the run")
    }
}

/// Lines a runner printed, with a bounded wait for one containing a text.
final class LineCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private let added = DispatchSemaphore(value: 0)

    func add(_ line: String) {
        lock.withLock { lines.append(line) }
        added.signal()
    }

    func wait(for text: String, seconds: Double) -> String? {
        let deadline = DispatchTime.now() + seconds
        while true {
            if let line = lock.withLock({ lines.first { $0.contains(text) } }) { return line }
            if added.wait(timeout: deadline) == .timedOut { return nil }
        }
    }
}

/// A run on a thread of its own: wait on `finished` (bounded), then read `outcome`.
final class BackgroundRun: Sendable {
    let finished = DispatchSemaphore(value: 0)
    let outcome = LockedBox<Result<RunResult, any Error>>()

    init(_ runner: LoadRunner) {
        Thread.detachNewThread { [finished, outcome] in
            outcome.value = Result { try runner.run() }
            finished.signal()
        }
    }
}

/// A value handed from one thread to another.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T?
    var value: T? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
