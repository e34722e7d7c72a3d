import EpollLoop
import Foundation
import XCTest
@testable import LoadTest

/// `--server-metrics`: loadtest scrapes an EpollLoop server's `GET /metrics` as its window begins and ends,
/// and reports the server's loop utilisation and lag beside its own latency.
final class ServerMetricsTests: XCTestCase {
    /// In process: an echo server of two loops whose metrics page is its group's Prometheus text (rendered
    /// per request, as the example servers' `--metrics` does), driven by a short run that scrapes it.
    func testRunReportsTheServersLoopUtilisationAndLag() throws {
        let server = try EchoServer(loops: 2)
        defer { XCTAssertNoThrow(try server.stop()) }
        let group = server.group
        let endpoint = try MetricsEndpoint(address: MetricsAddress(host: "127.0.0.1", port: 0), loop: group.loops[0]) {
            group.prometheusText()
        }
        defer { endpoint.close() }
        // The lag probe gives an echo server lag samples (its own work all starts on its loops, untimestamped).
        try group.startLagProbe(resolution: .milliseconds(1))

        let result = try shortRun(.echo, port: server.port, connections: 8, duration: 0.5) {
            $0.serverMetrics = MetricsAddress(host: "127.0.0.1", port: endpoint.port)
        }
        XCTAssertNil(result.warnings, "\(result.warnings ?? [])")
        let loops = try XCTUnwrap(result.serverLoops)
        XCTAssertEqual(loops.source, "127.0.0.1:\(endpoint.port)")
        XCTAssertEqual(loops.loops.map(\.loop), group.loops.map(\.name))
        XCTAssertEqual(loops.all.loop, "all")
        for l in loops.loops + [loops.all] {
            XCTAssertGreaterThan(l.utilisation, 0, l.loop)
            XCTAssertLessThanOrEqual(l.utilisation, 1, l.loop)
            XCTAssertGreaterThan(l.iterations, 0, l.loop)
            // The window is about 0.5 s on every loop's clock too.
            XCTAssertEqual((l.busySeconds + l.waitSeconds) / Double(l.loop == "all" ? 2 : 1), result.durationSeconds,
                           accuracy: 0.25, l.loop)
            XCTAssertGreaterThan(l.lag.count, 0, "\(l.loop): the lag probe's samples")
            XCTAssertNotNil(l.lag.p99Us, l.loop)
            XCTAssertLessThanOrEqual(try XCTUnwrap(l.lag.p50Us), try XCTUnwrap(l.lag.p99Us), l.loop)
            XCTAssertGreaterThan(try XCTUnwrap(l.lag.meanUs), 0, l.loop)
        }
        // All loops: the sums, and utilisation as summed busy over summed busy and wait.
        XCTAssertEqual(loops.all.lag.count, loops.loops.map(\.lag.count).reduce(0, +))
        XCTAssertEqual(loops.all.iterations, loops.loops.map(\.iterations).reduce(0, +))
        let busy = loops.loops.map(\.busySeconds).reduce(0, +), wait = loops.loops.map(\.waitSeconds).reduce(0, +)
        XCTAssertEqual(loops.all.utilisation, busy / (busy + wait), accuracy: 0.0001)

        let report = ReportText.report(result)
        XCTAssertTrue(report.contains("server loops (127.0.0.1:\(endpoint.port), over the window):"), report)
        XCTAssertTrue(report.contains("all 2 loops: utilisation \(ReportText.fixed(loops.all.utilisation, 2))"), report)
        for name in group.loops.map(\.name) { XCTAssertTrue(report.contains("    \(name): utilisation "), report) }
        XCTAssertTrue(report.contains("lag p50 ≤ "), report)

        let json = String(decoding: try result.jsonData(), as: UTF8.self)
        for key in ["\"server_loops\"", "\"utilisation\"", "\"busy_s\"", "\"wait_s\"", "\"lag\"", "\"p99_us\"", "\"mean_us\""] {
            XCTAssertTrue(json.contains(key), "missing \(key)")
        }
        XCTAssertEqual(try RunResult.decode(result.jsonData()), result)
    }

    /// The command-line tool against the example echo server (a child process serving `--metrics`): the
    /// report and the JSON carry the server's loops.
    func testLoadtestAgainstTheEchoServerReportsItsLoops() throws {
        let server = try ChildProcess(ChildProcess.product("echo-server"),
                                      ["--port", "0", "--loops", "2", "--metrics", "127.0.0.1:0"])
        defer {
            server.process.terminate()
            server.wait(seconds: 10)
        }
        guard server.waitForOutput(containing: "/metrics", seconds: 20),
              let port = Self.number(after: "listening on 127.0.0.1 port ", in: server.standardOutput),
              let metrics = Self.number(after: "metrics on http://127.0.0.1:", in: server.standardOutput) else {
            return XCTFail("echo-server did not start: \(server.standardOutput) \(server.standardError)")
        }
        let run = try ChildProcess.run(ChildProcess.product("loadtest"), [
            "echo", "--port", "\(port)", "-c", "4", "--loops", "1", "-d", "500ms", "--warmup", "100ms",
            "--server-metrics", "127.0.0.1:\(metrics)", "--json", "-",  // the report on standard error (not with --quiet)
        ])
        XCTAssertEqual(run.status, 0, run.error)
        let result = try RunResult.decode(Data(run.output.utf8))
        let loops = try XCTUnwrap(result.serverLoops, run.output)
        XCTAssertEqual(loops.loops.map(\.loop), ["echo-0", "echo-1"])
        XCTAssertGreaterThan(loops.all.utilisation, 0)
        XCTAssertGreaterThan(loops.all.iterations, 0)
        XCTAssertTrue(run.error.contains("server loops (127.0.0.1:\(metrics), over the window):"), run.error)
        XCTAssertTrue(run.error.contains("echo-0: utilisation "), run.error)
        // An echo server's work all starts on its loops: no lag samples, and the report says so.
        XCTAssertTrue(run.error.contains("no lag samples") || run.error.contains("lag p50 ≤ "), run.error)
    }

    /// A wrong address stops the run before it starts, naming the option.
    func testAnAddressWithoutMetricsStopsTheRunAtOnce() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        XCTAssertThrowsError(try shortRun(.echo, port: server.port, connections: 1, duration: 0.2) {
            // The echo server answers, but not with HTTP.
            $0.serverMetrics = MetricsAddress(host: "127.0.0.1", port: server.port)
        }) { error in
            XCTAssertTrue("\(error)".hasPrefix("--server-metrics: cannot read http://127.0.0.1:\(server.port)/metrics"), "\(error)")
        }
    }

    /// The parser reads exactly what `LoopMetrics.prometheusText` writes: the window between two pages
    /// equals `since(_:)` between the two snapshots.
    func testParsesTheLoopMetricsPage() throws {
        var a = LoopMetrics(loop: "odd \"name\"\\x")
        a.busyNanoseconds = 1_000_000_000
        a.waitNanoseconds = 3_000_000_000
        a.iterations = 10
        var b = a
        b.busyNanoseconds += 250_000_000
        b.waitNanoseconds += 750_000_000
        b.iterations += 90
        b.stalls = 2
        let before = ServerLoopMetrics.parse("other_metric{loop=\"x\"} 5\n" + LoopMetrics.prometheusText([a]))
        let after = ServerLoopMetrics.parse(LoopMetrics.prometheusText([b]))
        XCTAssertEqual(after.names, [a.loop])
        let window = try XCTUnwrap(ServerLoopMetrics.window(from: before, to: after, source: "s"))
        XCTAssertEqual(window.loops[0].utilisation, b.since(a).utilisation)
        XCTAssertEqual(window.loops[0].iterations, 90)
        XCTAssertEqual(window.loops[0].stalls, 2)
        XCTAssertEqual(window.all.lag.count, 0)
        XCTAssertNil(window.all.lag.p99Us)
    }

    func testParsesTheOption() throws {
        guard case .run(let config) = try CommandLineParser.parse(["echo", "--port", "9000", "--server-metrics", ":9464"]) else {
            return XCTFail("not a run")
        }
        XCTAssertEqual(config.serverMetrics, MetricsAddress(host: "127.0.0.1", port: 9464))
        XCTAssertThrowsError(try CommandLineParser.parse(["echo", "--port", "9000", "--server-metrics", "nope"])) {
            XCTAssertTrue("\($0)".hasPrefix("--server-metrics takes HOST:PORT"), "\($0)")
        }
    }

    /// The number right after `prefix` in `text`.
    private static func number(after prefix: String, in text: String) -> UInt16? {
        guard let range = text.range(of: prefix) else { return nil }
        return UInt16(text[range.upperBound...].prefix { $0.isNumber })
    }
}
