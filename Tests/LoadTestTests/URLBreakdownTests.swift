import Foundation
import XCTest
@testable import LoadTest

/// Several `--url`s: figures per URL; `--expect-status`, `--expect-body` and `--expect-length`.
final class URLBreakdownTests: XCTestCase {
    private func run(_ server: RecordingHTTPServer, _ extra: [String]) throws -> RunResult {
        let command = try CommandLineParser.parse([
            "http", "--url", "http://127.0.0.1:\(server.port)/a", "--url", "http://127.0.0.1:\(server.port)/missing",
            "-c", "2", "-l", "1", "-d", "0.3", "--warmup", "0.1", "-q",
        ] + extra)
        guard case .run(let config) = command else { throw ArgumentError("\(command)") }
        return try LoadRunner(config: config, output: { _ in }).run()
    }

    func testEachURLHasItsOwnFigures() throws {
        let server = try RecordingHTTPServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try run(server, [])
        let urls = try XCTUnwrap(result.urls)
        XCTAssertEqual(urls.map(\.url), ["/a", "/missing"])
        XCTAssertEqual(urls.map(\.figures.requests).reduce(0, +), result.requests, "every response of the window is some URL's")
        XCTAssertEqual(Double(urls[0].figures.requests), Double(urls[1].figures.requests), accuracy: 3, "the URLs take turns")
        XCTAssertGreaterThan(urls[0].figures.requests, 0)
        XCTAssertEqual(urls[0].figures.errors, 0)
        XCTAssertEqual(urls[1].figures.errors, result.errors.byKind["http_status"], "every 404 is /missing's")
        XCTAssertEqual(urls[0].figures.latencyUs.count, urls[0].figures.requests)
        XCTAssertEqual(urls[0].figures.requestsPerSecond, Double(urls[0].figures.requests) / result.durationSeconds, accuracy: 1e-6)
        let text = ReportText.report(result)
        XCTAssertTrue(text.contains("  by URL:\n    /a        "), text)
        XCTAssertTrue(text.contains("    /missing  "), text)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: result.jsonData()) as? [String: Any])
        let list = try XCTUnwrap(json["urls"] as? [[String: Any]])
        XCTAssertEqual(list.map { $0["url"] as? String }, ["/a", "/missing"])
        XCTAssertNotNil(list[0]["latency_us"] as? [String: Any])
        XCTAssertNotNil(list[0]["histogram"] as? [String: Any])
        // merge adds them up, URL by URL.
        let merged = try RunResult.merge([result, result])
        XCTAssertEqual(merged.urls?.map(\.figures.requests), urls.map { $0.figures.requests * 2 })
        XCTAssertEqual(try XCTUnwrap(merged.urls?[1].figures.requestsPerSecond), urls[1].figures.requestsPerSecond * 2, accuracy: 1e-9)
        // One URL: no breakdown.
        XCTAssertNil(try shortRun(.http, port: server.port, connections: 1, duration: 0.2).urls)
    }

    func testExpectedStatusesAndBodyChecks() throws {
        let server = try RecordingHTTPServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let statuses = try run(server, ["--expect-status", "200,404"])
        XCTAssertEqual(statuses.errors.total, 0, "404 is expected now: \(statuses.errors)")

        let body = try run(server, ["--expect-status", "2xx,404", "--expect-body", "ok"])
        XCTAssertNil(body.errors.byKind["http_status"])
        let failed = try XCTUnwrap(body.errors.byKind["check"])
        XCTAssertGreaterThan(failed, 0)
        XCTAssertEqual(body.urls?[1].figures.errors, failed, "only /missing's 'no!' fails")
        XCTAssertEqual(body.urls?[0].figures.errors, 0)
        XCTAssertEqual(body.errors.first, "response to /missing: body (3 bytes) does not contain 'ok' (--expect-body)")

        let length = try run(server, ["--expect-status", "200-299,404", "--expect-length", "2"])
        XCTAssertEqual(length.errors.byKind["check"], length.urls?[1].figures.errors)
        XCTAssertEqual(length.errors.first, "response to /missing: body of 3 bytes, expected 2 (--expect-length)")

        let status = try run(server, ["--expect-status", "204"])
        XCTAssertEqual(status.errors.byKind["http_status"], status.errors.total)
        XCTAssertEqual(status.errors.total, (status.urls?[0].figures.errors ?? 0) + (status.urls?[1].figures.errors ?? 0))
    }

    func testCheckParsing() throws {
        var checks = ResponseChecks()
        XCTAssertTrue(checks.accepts(status: 200) && checks.accepts(status: 299))
        XCTAssertFalse(checks.accepts(status: 300) || checks.accepts(status: 404) || checks.accepts(status: -1) || checks.accepts(status: 5000))
        try checks.expectStatuses("200,204")
        XCTAssertEqual((100...999).filter { checks.accepts(status: $0) }, [200, 204])
        try checks.expectStatuses("3xx, 404-405")
        XCTAssertEqual((100...999).filter { checks.accepts(status: $0) }, Array(300...399) + [404, 405])
        XCTAssertEqual(checks.statusText, "3xx, 404-405")
        for bad in ["", "abc", "99", "1000", "2xx-3xx", "300-200", "6xx", "200,"] {
            XCTAssertThrowsError(try ResponseChecks().with { try $0.expectStatuses(bad) }, bad)
        }
        func contains(_ haystack: String, _ needle: String) -> Bool {
            Array(haystack.utf8).withUnsafeBytes { ResponseChecks.contains($0, Array(needle.utf8)) }
        }
        XCTAssertTrue(contains("hello world", "world"))
        XCTAssertTrue(contains("aab", "ab"))
        XCTAssertFalse(contains("hello", "hello!"))
        XCTAssertFalse(contains("", "a"))
        XCTAssertTrue(contains("x", ""))

        guard case .run(let config) = try CommandLineParser.parse(["http", "--url", "http://h:1/", "--expect-status", "200,204",
                                                                   "--expect-body", "\"ok\":true", "--expect-length", "11"]) else { return XCTFail() }
        XCTAssertEqual(config.checks.body, Array("\"ok\":true".utf8))
        XCTAssertEqual(config.checks.length, 11)
        XCTAssertTrue(config.checks.accepts(status: 204))
        XCTAssertThrowsError(try CommandLineParser.parse(["echo", "--port", "9", "--expect-body", "x"])) { error in
            XCTAssertTrue("\(error)".contains("apply to http and tcp modes"), "\(error)")
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["http", "--url", "http://h:1/", "--expect-body", ""]))
    }
}

extension ResponseChecks {
    /// A copy changed by `change`.
    fileprivate func with(_ change: (inout ResponseChecks) throws -> Void) rethrows -> ResponseChecks {
        var copy = self
        try change(&copy)
        return copy
    }
}
