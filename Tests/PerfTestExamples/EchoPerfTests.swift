import EpollLoop
import LoadTest
import XCTest

/// echo-server's server under a closed and an open-loop load, through the public API only (no `@testable`).
final class EchoPerfTests: XCTestCase {
    /// Closed loop, the load on the server's own loop: no core is needed beyond the one the test has, and the
    /// figures are the server's and the client's together, as a quick check of a change should be.
    func testClosedLoopOnTheServersGroup() async throws {
        let group = try EventLoopGroup(numberOfLoops: 1, name: "perf-echo")
        defer { try? group.shutdownGracefully(timeout: .seconds(10)) }
        let server = try InProcessServer.echo(on: group)
        defer { try? server.stop() }
        var configuration = PerfSettings.closedLoop(.echo, port: server.port)
        configuration.group = group
        configuration.thresholds = ["errors==0", "p99<1s"]

        let report = try await PerfSettings.best(of: 2, configuration)

        XCTAssertEqual(report.errors.total, 0, report.text)
        XCTAssertTrue(report.thresholdsMet, report.text)
        XCTAssertEqual(report.connectionsEstablished, 4)
        // A quiet 2-core machine does more than 20,000 round trips a second here; 200 fails only a server that
        // stalls (a lost reply holds its connection until the 5 s timeout).
        XCTAssertGreaterThan(report.requestsPerSecond, 200, report.text)
        XCTAssertLessThan(report.latency.p99, 1_000_000, report.text)  // µs
        XCTAssertEqual(report.histogram.count, report.requests, "every reply of the window is timed")
        XCTAssertGreaterThanOrEqual(report.timeline.filter { !$0.isWarmup }.count, 2)
    }

    /// Open loop, the server on a group of its own: requests go out on schedule whatever the replies do, so
    /// the window holds the rate times its length, and latency counts from when each request was due.
    func testOpenLoopKeepsTheRate() async throws {
        let server = try InProcessServer.echo()
        defer { try? server.stop() }
        let rate = 400.0
        var configuration = PerfSettings.openLoop(.echo, port: server.port, rate: rate)
        configuration.thresholds = ["errors==0"]

        let report = try await LoadTest.run(configuration)

        XCTAssertEqual(report.errors.total, 0, report.text)
        XCTAssertEqual(report.targetRate, rate)
        // ±20 %: a stall of a few hundred ms at the window's edge moves a few requests across it; a pacer
        // that sends twice or half as many fails.
        XCTAssertEqual(report.requestsPerSecond, rate, accuracy: rate * 0.2, report.text)
        XCTAssertLessThan(report.latency.p99, 1_000_000, report.text)
        XCTAssertNotNil(report.serviceTime, "open loop also measures from the actual send")
    }
}
