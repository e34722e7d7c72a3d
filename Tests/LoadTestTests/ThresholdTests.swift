import Foundation
import XCTest
@testable import LoadTest

/// `--threshold`: parsing (with typed mistakes), checking against figures, the report, the JSON, the exit
/// status, and a merged run.
final class ThresholdTests: XCTestCase {
    /// A result with `requests` requests of `latencyNs` each, `errors` timeouts, over 10 s.
    static func result(requests: UInt64 = 10_000, latencyNs: UInt64 = 2_000_000, errors: UInt64 = 0) -> RunResult {
        var h = Histogram()
        h.record(latencyNs, times: requests)
        var counts = ErrorCounts()
        counts.add(.timeout, errors)
        return RunResult(mode: "echo", target: "127.0.0.1:9", connections: 10, connectionsEstablished: 10, connectionsFailed: 0,
                         connectionsOpen: 10, messageSize: 64, pipeline: 1, targetRate: nil, loops: 1, durationSeconds: 10,
                         warmupSeconds: 1, requests: requests, requestsPerSecond: Double(requests) / 10, bytes: requests * 64,
                         mibPerSecond: 0, errors: RunResult.Errors(counts, first: nil), latencyUs: RunResult.Latency(h),
                         histogram: RunResult.HistogramData(h), timeline: [])
    }

    func testParsesWhatK6UsersWrite() throws {
        let cases: [(String, Threshold.Metric, Threshold.Comparison, Double)] = [
            ("p99<10ms", .percentile(99), .less, 10_000),
            ("p(95) < 200", .percentile(95), .less, 200_000),  // a bare number is ms, as in k6
            ("p99.9<=1.5s", .percentile(99.9), .lessOrEqual, 1_500_000),
            ("median<500us", .percentile(50), .less, 500),
            ("avg<250µs", .mean, .less, 250),
            ("max<800ns", .max, .less, 0.8),
            ("errors<0.1%", .errorPercent, .less, 0.1),
            ("errors==0", .errors, .equal, 0),
            ("rate>=50000", .rate, .greaterOrEqual, 50_000),
            ("rate>20k/s", .rate, .greater, 20_000),
            ("requests>=1k", .requests, .greaterOrEqual, 1000),
        ]
        for (text, metric, comparison, limit) in cases {
            let t = try Threshold.parse(text)
            XCTAssertEqual(t.metric, metric, text)
            XCTAssertEqual(t.comparison, comparison, text)
            XCTAssertEqual(t.limit, limit, accuracy: 1e-9, text)
            XCTAssertEqual(t.text, text)
        }
    }

    func testMalformedThresholdsAreTypedErrors() {
        func error(_ text: String) -> Threshold.ParseError? {
            do {
                _ = try Threshold.parse(text)
                return nil
            } catch {
                return error
            }
        }
        XCTAssertEqual(error("p99 10ms"), .noComparison("p99 10ms"))
        XCTAssertEqual(error("p99=10ms"), .noComparison("p99=10ms"))
        XCTAssertEqual(error("latency<10ms"), .unknownMetric("latency", threshold: "latency<10ms"))
        XCTAssertEqual(error("p101<10ms"), .badPercentile("p101", threshold: "p101<10ms"))
        XCTAssertEqual(error("p0<10ms"), .badPercentile("p0", threshold: "p0<10ms"))
        XCTAssertEqual(error("p99<fast"), .badValue("fast", threshold: "p99<fast", expected: "a time such as 10ms, 500us, 2s (a bare number is ms)"))
        XCTAssertEqual(error("errors<150%"), .badValue("150%", threshold: "errors<150%", expected: "a percentage from 0% to 100%"))
        XCTAssertEqual(error("errors<1.5"), .badValue("1.5", threshold: "errors<1.5", expected: "a whole number (or, for errors, a percentage such as 0.1%)"))
        XCTAssertEqual(error("rate>=-3"), .badValue("-3", threshold: "rate>=-3", expected: "requests per second such as 50000 or 50k"))
        // On the command line: the same sentence, naming the flag, at parse time.
        XCTAssertThrowsError(try CommandLineParser.parse(["echo", "--port", "9", "--threshold", "p99<"])) { error in
            XCTAssertEqual("\(error)", "--threshold: threshold 'p99<': '' is not a time such as 10ms, 500us, 2s (a bare number is ms)")
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["idle", "--port", "9", "--threshold", "p99<1ms"])) { error in
            XCTAssertTrue("\(error)".contains("idle mode sends no requests"), "\(error)")
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["stream", "--port", "9", "--threshold", "max<1s"])) { error in
            XCTAssertTrue("\(error)".contains("measures no latency in closed loop"), "\(error)")
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["merge", "a.json", "--threshold", "x"]))
    }

    func testScopesJudgeAURLOrAStage() throws {
        let search = try Threshold.parse("p(95){url:/search?q=1&x=<}<50")
        XCTAssertEqual(search.scope, .url("/search?q=1&x=<"), "the comparison is looked for after the scope")
        XCTAssertEqual(search.metric, .percentile(95))
        XCTAssertEqual(search.limit, 50_000)
        let stage = try Threshold.parse("rate{stage:2} >= 19k")
        XCTAssertEqual(stage.scope, .stage(2))
        XCTAssertEqual(stage.comparison, .greaterOrEqual)
        XCTAssertEqual(try Threshold.parse("errors{url:/a}<1%").metric, .errorPercent)
        for (text, expected) in [("p99{host:x}<1ms", Threshold.ParseError.badScope("{host:x}", threshold: "p99{host:x}<1ms")),
                                 ("p99{stage:0}<1ms", .badScope("{stage:0}", threshold: "p99{stage:0}<1ms")),
                                 ("p99{url:/a<1ms", .badScope("{url:/a<1ms", threshold: "p99{url:/a<1ms")),
                                 ("p99{url:/a}", .noComparison("p99{url:/a}"))] {
            XCTAssertThrowsError(try Threshold.parse(text)) { XCTAssertEqual($0 as? Threshold.ParseError, expected, text) }
        }
        // On the command line the scope must name one of the run's URLs or stages.
        XCTAssertNoThrow(try CommandLineParser.parse(["http", "--url", "http://h:1/a", "--url", "http://h:1/b", "--threshold", "p99{url:/b}<1s"]))
        XCTAssertThrowsError(try CommandLineParser.parse(["http", "--url", "http://h:1/a", "--url", "http://h:1/b", "--threshold", "p99{url:/c}<1s"])) {
            XCTAssertTrue("\($0)".contains("/c is not one of the --url paths (/a, /b)"), "\($0)")
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["echo", "--port", "9", "--stages", "1s:10,1s:10", "--threshold", "p99{stage:3}<1s"])) {
            XCTAssertTrue("\($0)".contains("there is no stage 3 (--stages has 2)"), "\($0)")
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["echo", "--port", "9", "--threshold", "p99{stage:1}<1s"]))

        // Judged on the part's figures: a slow URL fails where the whole run passes.
        var r = Self.result(requests: 10_000, latencyNs: 2_000_000)
        var slow = Histogram(), fast = Histogram()
        slow.record(40_000_000, times: 100)
        fast.record(1_000_000, times: 9_900)
        r.urls = [RunResult.URLFigures(url: "/fast", figures: RunResult.PartFigures(fast, errors: 0, seconds: 10)),
                  RunResult.URLFigures(url: "/slow", figures: RunResult.PartFigures(slow, errors: 5, seconds: 10))]
        r.checkThresholds(try ["p99<50ms", "p99{url:/fast}<10ms", "p99{url:/slow}<10ms", "errors{url:/slow}<1%", "rate{url:/slow}>=10",
                               "p99{url:/gone}<1s", "p99{stage:1}<1s"].map(Threshold.parse))
        XCTAssertEqual(r.thresholds?.map(\.passed), [true, true, false, false, true, false, false])
        XCTAssertEqual(r.thresholds?[3].value, 5)
        XCTAssertNil(r.thresholds?[5].value, "no such URL: not measured")
        XCTAssertTrue(ReportText.report(r).contains("FAIL  p99{url:/slow}<10ms   40.00 ms"), ReportText.report(r))
        // A threshold on one URL's errors does not judge the run's.
        var errors = Self.result(errors: 3)
        errors.urls = [RunResult.URLFigures(url: "/a", figures: RunResult.PartFigures(fast, errors: 0, seconds: 10))]
        errors.checkThresholds([try Threshold.parse("errors{url:/a}<50%")])
        XCTAssertEqual(errors.thresholds?.first?.passed, true)
        XCTAssertEqual(ExitStatus.of(errors, wroteOutputs: true), 1)
    }

    func testCommandLineCollectsThresholds() throws {
        guard case .run(let config) = try CommandLineParser.parse([
            "http", "--url", "http://127.0.0.1:8080/", "--threshold", "p99<10ms", "--threshold=errors<0.1%", "--threshold", "rate>=50000",
        ]) else { return XCTFail() }
        XCTAssertEqual(config.thresholds.map(\.text), ["p99<10ms", "errors<0.1%", "rate>=50000"])
        XCTAssertEqual(try CommandLineParser.parse(["merge", "a.json", "b.json", "--threshold", "p99<10ms"]),
                       .merge(inputs: ["a.json", "b.json"], jsonPath: nil, svgPath: nil, quiet: false, allowMixed: false,
                              thresholds: [try Threshold.parse("p99<10ms")]))
    }

    func testCheckingFiguresTheReportAndTheJSON() throws {
        var r = Self.result(requests: 10_000, latencyNs: 2_000_000, errors: 25)  // 2 ms each, 0.25 % errors, 1,000/s
        r.checkThresholds(try ["p99<10ms", "errors<0.1%", "rate>=1000", "p50>3ms", "requests>=10k"].map(Threshold.parse))
        let outcomes = try XCTUnwrap(r.thresholds)
        XCTAssertEqual(outcomes.map(\.passed), [true, false, true, false, true])
        XCTAssertEqual(try XCTUnwrap(outcomes[0].value), 2000, accuracy: 2000 / 200)
        XCTAssertEqual(outcomes[0].unit, "us")
        XCTAssertEqual(outcomes[0].limit, 10_000)
        XCTAssertEqual(outcomes[1].value, 0.25)
        XCTAssertEqual(outcomes[1].unit, "percent")
        XCTAssertEqual(outcomes[2].value, 1000)
        XCTAssertFalse(r.thresholdsPassed)

        let text = ReportText.report(r)
        XCTAssertTrue(text.contains("  thresholds: 2 of 5 failed"), text)
        XCTAssertTrue(text.contains("    pass  p99<10ms       2.00 ms"), text)
        XCTAssertTrue(text.contains("    FAIL  errors<0.1%    0.250 %"), text)
        XCTAssertTrue(text.contains("    pass  rate>=1000     1,000/s"), text)
        XCTAssertTrue(text.contains("    pass  requests>=10k  10,000"), text)

        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: r.jsonData()) as? [String: Any])
        let list = try XCTUnwrap(json["thresholds"] as? [[String: Any]])
        XCTAssertEqual(list.count, 5)
        XCTAssertEqual(list[1]["threshold"] as? String, "errors<0.1%")
        XCTAssertEqual(list[1]["passed"] as? Bool, false)
        XCTAssertEqual(list[1]["value"] as? Double, 0.25)
        XCTAssertEqual(list[1]["limit"] as? Double, 0.1)
        XCTAssertEqual(try RunResult.decode(r.jsonData()), r)

        // A figure the run does not have fails: no latency recorded.
        var empty = Self.result(requests: 0)
        empty.checkThresholds([try Threshold.parse("p99<10ms"), try Threshold.parse("errors<1%")])
        XCTAssertEqual(empty.thresholds?.map(\.passed), [false, true])
        XCTAssertTrue(ReportText.report(empty).contains("FAIL  p99<10ms   not measured"), ReportText.report(empty))
    }

    func testExitStatus() throws {
        let clean = Self.result()
        XCTAssertEqual(ExitStatus.of(clean, wroteOutputs: true), 0)
        XCTAssertEqual(ExitStatus.of(clean, wroteOutputs: false), 1)
        let failing = Self.result(errors: 3)
        XCTAssertEqual(ExitStatus.of(failing, wroteOutputs: true), 1, "errors without a threshold on them")
        XCTAssertEqual(ExitStatus.of(failing, wroteOutputs: true, countErrors: false), 0, "merge only reports errors")
        var judged = failing
        judged.checkThresholds([try Threshold.parse("errors<0.1%")])  // 3 of 10,000: 0.03 %
        XCTAssertEqual(ExitStatus.of(judged, wroteOutputs: true), 0, "an errors threshold decides about the errors")
        judged.checkThresholds([try Threshold.parse("errors==0")])
        XCTAssertEqual(ExitStatus.of(judged, wroteOutputs: true), 99)
        var slow = clean
        slow.checkThresholds([try Threshold.parse("p99<1ms")])
        XCTAssertEqual(ExitStatus.of(slow, wroteOutputs: true), ExitStatus.thresholdFailed)
        XCTAssertEqual(ExitStatus.of(slow, wroteOutputs: false), 99, "a failed threshold wins over everything")
    }

    func testMergeChecksTheThresholdsOnTheMergedFigures() throws {
        // Each part alone runs at 1,000/s; together 2,000/s: the merged run passes rate>=1500 where no part did.
        var a = Self.result(), b = Self.result()
        a.checkThresholds([try Threshold.parse("rate>=1500")])
        b.checkThresholds([try Threshold.parse("rate>=1500")])
        XCTAssertFalse(a.thresholdsPassed)
        var merged = try RunResult.merge([a, b])
        XCTAssertNil(merged.thresholds, "the parts' outcomes are not the merged run's")
        merged.checkThresholds(Threshold.forMerge(given: [], results: [a, b]))
        XCTAssertEqual(merged.thresholds?.map(\.threshold), ["rate>=1500"])
        XCTAssertEqual(merged.thresholds?.first?.passed, true)
        // Thresholds given to merge replace the recorded ones.
        merged.checkThresholds(Threshold.forMerge(given: [try Threshold.parse("rate>=5000")], results: [a, b]))
        XCTAssertEqual(merged.thresholds?.map(\.passed), [false])
    }

    func testTheBinaryExitsWith99WhenAThresholdFails() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lt-thresholds-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let json = directory.appendingPathComponent("run.json").path
        let common = [ChildProcess.product("loadtest"), "echo", "--port", "\(server.port)", "-c", "2", "-l", "1", "-d", "0.3", "--warmup", "0"]
        let failed = try ChildProcess.run(common[0], Array(common.dropFirst()) + ["--threshold", "p99<1ns", "--threshold", "errors==0", "--json", json])
        XCTAssertEqual(failed.status, 99, failed.output + failed.error)
        XCTAssertTrue(failed.output.contains("thresholds: 1 of 2 failed"), failed.output)
        XCTAssertTrue(failed.output.contains("FAIL  p99<1ns"), failed.output)
        let passed = try ChildProcess.run(common[0], Array(common.dropFirst()) + ["--threshold", "p99<10s"])
        XCTAssertEqual(passed.status, 0, passed.output + passed.error)
        // merge checks the thresholds the run was made with, on the merged figures, with the same exit status.
        let merge = try ChildProcess.run(ChildProcess.product("loadtest"), ["merge", json, json, "--mixed"])
        XCTAssertEqual(merge.status, 99, merge.output + merge.error)
        XCTAssertTrue(merge.output.contains("FAIL  p99<1ns"), merge.output)
        let relaxed = try ChildProcess.run(ChildProcess.product("loadtest"), ["merge", json, "--threshold", "requests>=1"])
        XCTAssertEqual(relaxed.status, 0, relaxed.output + relaxed.error)
        XCTAssertTrue(relaxed.output.contains("thresholds: the one passed"), relaxed.output)
    }
}
