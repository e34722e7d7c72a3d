import Foundation
import XCTest
@testable import LoadTest

/// `loadtest merge`'s checks: settings must agree (or `--mixed`), windows should line up.
final class MergeTests: XCTestCase {
    private func result(size: Int? = 64, pipeline: Int? = 1, rate: Double? = nil, window: (Double, Double)? = (1000, 1010),
                        id: String? = nil, requests: UInt64 = 100) -> RunResult {
        var h = Histogram()
        h.record(1000, times: requests)
        var r = RunResult(mode: "echo", target: "127.0.0.1:9", connections: 10, connectionsEstablished: 10, connectionsFailed: 0,
                          connectionsOpen: 10, messageSize: size, pipeline: pipeline, targetRate: rate, loops: 1,
                          durationSeconds: 10, warmupSeconds: 1, requests: requests, requestsPerSecond: Double(requests) / 10,
                          bytes: requests * 64, mibPerSecond: 0, errors: RunResult.Errors(ErrorCounts(), first: nil),
                          latencyUs: RunResult.Latency(h), histogram: RunResult.HistogramData(h), timeline: [])
        r.windowStart = window?.0
        r.windowEnd = window?.1
        r.id = id
        return r
    }

    func testDifferentSettingsAreRefusedUnlessMixed() throws {
        let a = result(id: "small"), b = result(size: 1024, pipeline: 4, id: "big"), c = result(rate: 1000)
        XCTAssertThrowsError(try RunResult.merge([a, b, c])) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("message size: 64 B ('small', result 3), 1024 B ('big')"), text)
            XCTAssertTrue(text.contains("pipeline: 1 ('small', result 3), 4 ('big')"), text)
            XCTAssertTrue(text.contains("load: closed loop ('small', 'big'), open loop (result 3)"), text)
            XCTAssertTrue(text.contains("--mixed"), text)
        }
        let mixed = try RunResult.merge([a, b], allowMixed: true)
        XCTAssertNil(mixed.messageSize)
        XCTAssertTrue(ReportText.report(mixed).contains("echo mixed sizes, mixed pipelines"), ReportText.report(mixed))
        XCTAssertEqual(mixed.id, "small,big")
    }

    func testWindowsThatDoNotLineUpAreSaid() throws {
        let together = try RunResult.merge([result(window: (1000, 1010)), result(window: (1000.02, 1010.02))])
        XCTAssertNil(together.warnings)
        XCTAssertEqual(try XCTUnwrap(together.windowStartSpread), 0.02, accuracy: 1e-9)
        XCTAssertEqual(together.windowStart, 1000)
        XCTAssertEqual(together.windowEnd, 1010.02)
        XCTAssertEqual(together.requests, 200)

        let apart = try RunResult.merge([result(window: (1000, 1010)), result(window: (1020, 1030))])
        XCTAssertEqual(apart.warnings?.count, 1)
        XCTAssertTrue(apart.warnings![0].hasPrefix("the measured windows do not overlap (they start 20.0 s apart)"), apart.warnings![0])
        XCTAssertTrue(ReportText.report(apart).contains("warning: the measured windows do not overlap"))

        let partly = try RunResult.merge([result(window: (1000, 1010)), result(window: (1005, 1015))])
        XCTAssertTrue(partly.warnings?.first?.hasPrefix("the measured windows overlap for only 5.00 s of 10.00 s") == true, "\(partly.warnings ?? [])")

        let old = try RunResult.merge([result(window: nil), result()])
        XCTAssertTrue(old.warnings?.first?.contains("carry no window times") == true, "\(old.warnings ?? [])")
    }

    func testJSONWithoutTheNewKeysStillDecodes() throws {
        // A result as loadtest wrote it before --start-at existed.
        var object = try XCTUnwrap(JSONSerialization.jsonObject(with: try result().jsonData()) as? [String: Any])
        XCTAssertNotNil(object.removeValue(forKey: "window_start"))
        XCTAssertNotNil(object.removeValue(forKey: "window_end"))
        let decoded = try RunResult.decode(try JSONSerialization.data(withJSONObject: object))
        XCTAssertNil(decoded.windowStart)
        XCTAssertEqual(decoded.requests, 100)
    }

    func testReportTextForNewUsers() {
        XCTAssertEqual(ReportText.count(1, "connection"), "1 connection")
        XCTAssertEqual(ReportText.count(12_345, "connection"), "12,345 connections")
        var churn = result()
        churn.mode = "connect"
        churn.connectionsEstablished = 123_456
        let text = ReportText.report(churn)
        XCTAssertTrue(text.contains("connects: 123,456 made, 0 failed (whole run, warm-up included)"), text)
        XCTAssertTrue(text.contains("10 churn slots"), text)
    }
}
