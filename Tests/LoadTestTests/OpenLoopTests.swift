import XCTest
@testable import LoadTest

/// `--rate` beyond echo: stream chunks and connection churn on a schedule, with latency from the intended
/// start and service time from the actual one.
final class OpenLoopTests: XCTestCase {
    private func check(_ result: RunResult, rate: Double, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(result.errors.total, 0, "\(result.errors)", file: file, line: line)
        // rate × 0.5 s, with room for a busy machine moving replies across the window's edges.
        XCTAssertGreaterThan(Double(result.requests), rate * 0.5 * 0.6, file: file, line: line)
        XCTAssertLessThan(Double(result.requests), rate * 0.5 * 1.4, file: file, line: line)
        let service = try XCTUnwrap(result.serviceTimeUs, "open loop reports service time", file: file, line: line)
        XCTAssertEqual(service.count, result.latencyUs.count, file: file, line: line)
        // Latency counts from the intended time, which is never after the actual one.
        XCTAssertGreaterThanOrEqual(result.latencyUs.max, service.max, file: file, line: line)
        XCTAssertGreaterThanOrEqual(result.latencyUs.mean, service.mean * 0.999, file: file, line: line)
        XCTAssertTrue(ReportText.report(result).contains("service time (from the actual send)"), file: file, line: line)
    }

    func testStreamAtARate() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try shortRun(.stream, port: server.port, connections: 4, duration: 0.5) {
            $0.rate = 400
            $0.size = 4096
        }
        try check(result, rate: 400)
        XCTAssertEqual(result.bytes, result.requests * 4096)
    }

    func testConnectionChurnAtARate() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try shortRun(.connect, port: server.port, connections: 8, duration: 0.5) { $0.rate = 400 }
        try check(result, rate: 400)
    }

    func testHTTPAtARate() throws {
        let server = try HelloServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try shortRun(.http, port: server.port, connections: 4, duration: 0.5) {
            $0.rate = 400
            $0.hostHeader = "127.0.0.1"
        }
        try check(result, rate: 400)
    }

    func testARateNotReachedIsSaid() throws {
        // One connection to a server that never answers can carry at most its 1,024 requests in flight.
        let server = try SilentServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try shortRun(.echo, port: server.port, connections: 1, duration: 0.5) { $0.rate = 100_000 }
        let warning = try XCTUnwrap(result.warnings?.first)
        XCTAssertTrue(warning.hasPrefix("the target rate of 100,000/s was not reached: 0/s, 100 % short"), warning)
        XCTAssertTrue(ReportText.report(result).contains("warning: the target rate"))
        XCTAssertNil(RunResult.rateWarning(target: 1000, achieved: 960))
        XCTAssertNil(RunResult.rateWarning(target: nil, achieved: 0))
        XCTAssertEqual(RunResult.rateWarning(target: 1000, achieved: 500)?.hasPrefix("the target rate of 1,000/s was not reached: 500/s, 50 % short"), true)
    }
}
