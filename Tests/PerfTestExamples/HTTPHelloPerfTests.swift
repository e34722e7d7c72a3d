import LoadTest
import Testing

/// http-hello's server under load, as Swift Testing cases. `.serialized`: Swift Testing runs a suite's tests
/// in parallel unless told, and two loads at once on a 2-core machine measure each other.
@Suite(.serialized)
struct HTTPHelloPerfTests {
    /// Closed loop, with the pass/fail criteria as `--threshold` takes them.
    @Test func closedLoop() async throws {
        let server = try InProcessServer.httpHello()
        defer { try? server.stop() }
        var configuration = PerfSettings.closedLoop(.http, port: server.port)
        configuration.thresholds = ["errors==0", "p99<1s", "rate>=200"]

        let report = try await PerfSettings.best(of: 2, configuration)

        #expect(report.thresholdsMet, "\(report.text)")
        #expect(report.thresholds.map(\.threshold) == ["errors==0", "p99<1s", "rate>=200"])
        #expect(report.errors.total == 0, "\(report.errors.byKind)")
        #expect(report.requests == report.histogram.count)
        #expect(report.requestsPerSecond > 200)
    }

    /// Open loop at a fixed rate, progress seen as it goes.
    @Test func openLoop() async throws {
        let server = try InProcessServer.httpHello()
        defer { try? server.stop() }
        let rate = 300.0
        let configuration = PerfSettings.openLoop(.http, port: server.port, rate: rate)
        let seconds = SecondsSeen()

        let report = try await LoadTest.run(configuration) { sample in seconds.add(sample) }

        #expect(report.errors.total == 0, "\(report.text)")
        #expect(abs(report.requestsPerSecond - rate) <= rate * 0.2, "\(report.text)")
        #expect(report.latency.p99 < 1_000_000)
        #expect(seconds.all == report.timeline, "the progress handler saw every second the report has")
    }
}
