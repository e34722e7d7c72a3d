import Foundation
import XCTest
@testable import LoadTest

/// `--series`: rows per interval of the window, written as each interval ends, that add up to the report.
final class SeriesTests: XCTestCase {
    private func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("lt-series-\(getpid())-\(name)").path
    }

    /// The CSV's header and its rows, each as a column-name → field map.
    private func readCSV(_ path: String) throws -> (header: [String], rows: [[String: String]]) {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        let header = try XCTUnwrap(lines.first).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let rows = lines.dropFirst().map { line in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            XCTAssertEqual(fields.count, header.count, line)
            return Dictionary(uniqueKeysWithValues: zip(header, fields))
        }
        return (header, rows)
    }

    func testCSVRowsAddUpToTheReportAndMoveForward() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let path = temporaryPath("rows.csv")
        defer { unlink(path) }
        var result = try shortRun(.echo, port: server.port, connections: 4, duration: 1) {
            $0.series.path = path
            $0.series.givenInterval = 0.2
        }
        let (header, rows) = try readCSV(path)
        XCTAssertEqual(header, SeriesRow.columns)
        // Five 200 ms intervals (fewer only if the coordinator was held up past a boundary).
        XCTAssertTrue((2...5).contains(rows.count), "\(rows)")
        var total: UInt64 = 0
        var lastT = 0.0
        var length = 0.0
        for row in rows {
            let t = try XCTUnwrap(Double(row["t_s"] ?? ""))
            XCTAssertGreaterThan(t, lastT, "times increase")
            lastT = t
            length += try XCTUnwrap(Double(row["interval_s"] ?? ""))
            let requests = try XCTUnwrap(UInt64(row["requests"] ?? ""))
            total += requests
            if requests > 0 {
                let p50 = try XCTUnwrap(Double(row["p50_us"] ?? "")), p99 = try XCTUnwrap(Double(row["p99_us"] ?? ""))
                let max = try XCTUnwrap(Double(row["max_us"] ?? ""))
                XCTAssertTrue(p50 > 0 && p50 <= p99 && p99 <= max, "\(row)")
            }
            XCTAssertEqual(row["errors"], "0")
            XCTAssertEqual(row["errors_by_kind"], "")
            XCTAssertGreaterThanOrEqual(try XCTUnwrap(Double(row["cpu_s"] ?? "")), 0)
        }
        XCTAssertEqual(total, result.requests, "the intervals add up to the window")
        XCTAssertGreaterThan(total, 0)
        XCTAssertEqual(lastT, result.durationSeconds, accuracy: 0.002, "the last row ends with the window")
        XCTAssertEqual(length, result.durationSeconds, accuracy: 0.005)

        // The SVG draws the intervals' percentiles, and only when it has them.
        let points = try XCTUnwrap(result.latencyOverTime)
        XCTAssertEqual(points.map(\.t).count, rows.filter { $0["p50_us"] != "" }.count)
        XCTAssertTrue(SVGChart.render(result).contains("Latency over the measured window"))
        result.latencyOverTime = nil
        XCTAssertFalse(SVGChart.render(result).contains("Latency over the measured window"))
    }

    func testJSONLinesByExtensionParse() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let path = temporaryPath("rows.jsonl")
        defer { unlink(path) }
        let result = try shortRun(.echo, port: server.port, connections: 2, duration: 0.6) {
            $0.series.path = path
            $0.series.givenInterval = 0.2
        }
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        XCTAssertFalse(lines.isEmpty)
        var total: UInt64 = 0
        for line in lines {
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            XCTAssertEqual(Set(object.keys), Set(SeriesRow.columns), String(line))
            total += try XCTUnwrap((object["requests"] as? NSNumber)?.uint64Value)
            XCTAssertNotNil(object["errors_by_kind"] as? [String: Any])
        }
        XCTAssertEqual(total, result.requests)
    }

    func testRowsAreOnDiskWhileTheRunGoes() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let path = temporaryPath("live.csv")
        defer { unlink(path) }
        var config = LoadConfig(mode: .echo)
        config.port = server.port
        config.connections = 2
        config.loops = 1
        config.warmup = 0
        config.duration = 60  // ended by interrupt() once a row has been read
        config.quiet = true
        config.series.path = path
        config.series.givenInterval = 0.2
        let runner = LoadRunner(config: config, output: { _ in })
        let run = BackgroundRun(runner)
        let finished = run.finished, outcome = run.outcome
        defer {
            runner.interrupt()
            XCTAssertEqual(finished.wait(timeout: .now() + 30), .success)
        }
        // Poll, with a deadline, for the header and a first row.
        let deadline = Date().addingTimeInterval(20)
        var lines: [Substring] = []
        while Date() < deadline {
            lines = ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n")
            if lines.count >= 2 { break }
            usleep(10_000)
        }
        XCTAssertGreaterThanOrEqual(lines.count, 2, "a row within 20 s of a 200 ms interval")
        XCTAssertNil(outcome.value, "the run is still going")

        runner.interrupt()
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success)
        finished.signal()  // for the deferred wait
        let result = try XCTUnwrap(outcome.value).get()
        let (_, rows) = try readCSV(path)
        XCTAssertEqual(rows.compactMap { UInt64($0["requests"] ?? "") }.reduce(0, +), result.requests,
                       "the cut window's rows add up too")
    }

    func testErrorsAreCountedInTheIntervalTheyHappenIn() throws {
        let server = try SilentServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let path = temporaryPath("errors.csv")
        defer { unlink(path) }
        // The requests go out as the load starts (before the window, 0.1 s later) and time out 0.2 s after.
        let result = try shortRun(.echo, port: server.port, connections: 3, duration: 1) {
            $0.timeout = 0.2
            $0.series.path = path
            $0.series.givenInterval = 0.2
        }
        XCTAssertEqual(result.errors.byKind["timeout"], 3, "\(result.errors)")
        let (_, rows) = try readCSV(path)
        XCTAssertEqual(rows.compactMap { UInt64($0["errors"] ?? "") }.reduce(0, +), 3, "\(rows)")
        let kinds = rows.compactMap { $0["errors_by_kind"] }.filter { !$0.isEmpty }
        XCTAssertEqual(kinds.flatMap { $0.split(separator: ";") }.map { $0.split(separator: "=") }
            .reduce(0) { $0 + ($1.first == "timeout" ? Int($1.last!)! : 1000) }, 3, "\(kinds)")
        XCTAssertTrue(rows.allSatisfy { $0["requests"] == "0" && $0["p50_us"] == "" }, "\(rows)")
    }

    func testRowText() {
        var errors = ErrorCounts()
        errors.add(.refused, 2)
        errors.add(.timeout)
        let empty = SeriesRow(t: 1.5, seconds: 0.5, requests: 0, latency: nil, errors: errors, cpuSeconds: 0.0001)
        XCTAssertEqual(empty.csv, "1.500,0.500,0,0.0,,,,,,3,refused=2;timeout=1,0.000100\n")
        XCTAssertEqual(empty.jsonLine, "{\"t_s\":1.500,\"interval_s\":0.500,\"requests\":0,\"rate\":0.0,"
            + "\"p50_us\":null,\"p90_us\":null,\"p99_us\":null,\"p99_9_us\":null,\"max_us\":null,\"errors\":3,"
            + "\"errors_by_kind\":{\"refused\":2,\"timeout\":1},\"cpu_s\":0.000100}\n")
        var histogram = Histogram()
        for v: UInt64 in [10_000, 20_000, 30_000] { histogram.record(v) }
        let row = SeriesRow(t: 12_345, seconds: 1, requests: 3_000, latency: RunResult.Latency(histogram),
                            errors: ErrorCounts(), cpuSeconds: 2)
        XCTAssertTrue(row.csv.hasPrefix("12345.000,1.000,3000,3000.0,"), row.csv)
        XCTAssertTrue(row.csv.hasSuffix(",0,,2.000000\n"), row.csv)
    }

    func testFlags() throws {
        func parsed(_ arguments: [String]) throws -> SeriesOptions {
            let outcome = try CommandLineParser.parse(["echo", "--port", "9"] + arguments)
            guard case .run(let config) = outcome else { throw NotARun(outcome: "\(outcome)") }
            return config.series
        }
        let plain = try parsed(["--series", "out.csv"])
        XCTAssertEqual(plain.path, "out.csv")
        XCTAssertEqual(plain.interval, 1)
        XCTAssertEqual(plain.format, .csv)
        XCTAssertEqual(try parsed(["--series", "out.JSONL", "--series-interval", "200ms"]).format, .jsonl)
        XCTAssertEqual(try parsed(["--series", "out.jsonl", "--series-interval", "200ms"]).interval, 0.2)
        XCTAssertEqual(try parsed(["--series", "out.log"]).format, .csv, "no known extension: CSV")
        XCTAssertEqual(try parsed(["--series-format", "jsonl", "--series", "out.csv"]).format, .jsonl,
                       "the flag wins over the extension")
        XCTAssertNil(try parsed([]).path)

        for bad in [
            ["--series", "s.csv", "--series-interval", "0"], ["--series", "s.csv", "--series-interval", "5ms"],
            ["--series", "s.csv", "--series-interval", "2h"], ["--series", "s.csv", "--series-interval", "soon"],
            ["--series", "s.csv", "--series-format", "xml"], ["--series-interval", "1s"],
            ["--series-format", "csv"], ["--series", "-"], ["--series"],
        ] {
            XCTAssertEqual(LoadTestMain.run(["echo", "--port", "9", "-q"] + bad), 2, "\(bad)")
        }
        // A file that cannot be written stops the run before it starts.
        XCTAssertEqual(LoadTestMain.run(["echo", "--port", "9", "-q", "--series", "/nonexistent-dir/s.csv"]), 2)
    }
}

/// A command line that should have parsed to a run parsed to something else: the test fails with what it was.
private struct NotARun: Error, CustomStringConvertible {
    let outcome: String
    var description: String { "the command line did not parse to a run: \(outcome)" }
}
