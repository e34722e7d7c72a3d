import Foundation
import SharedTestSupport
import XCTest
@testable import LoadTest

/// docs/loadtest.md's Python decoder of the JSON histogram, run on a real report: its percentiles are the
/// report's `latency_us`, so the page describes the bucket layout as loadtest writes it.
final class HistogramDecodingDocTests: XCTestCase {
    static let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/loadtest.md").path

    /// The first ```python block after the heading "### The histogram buckets".
    private func snippet() throws -> String {
        let text = try String(contentsOfFile: Self.page, encoding: .utf8)
        let section = try XCTUnwrap(text.range(of: "### The histogram buckets"), "no histogram section")
        let start = try XCTUnwrap(text.range(of: "```python\n", range: section.upperBound..<text.endIndex))
        let end = try XCTUnwrap(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        return String(text[start.upperBound..<end.lowerBound])
    }

    func testTheDocumentedDecoderGivesTheReportsPercentiles() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        // Open loop on a few connections: latencies spread over many buckets, above 256 ns.
        let result = try shortRun(.echo, port: server.port, connections: 4, duration: 0.5) { $0.rate = 4000 }
        XCTAssertGreaterThan(result.latencyUs.count, 100)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("decode-\(getpid()).json")
        try result.jsonData().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        let run = try ChildProcess.run(try TestTool.path("python3"), ["-c", try snippet(), file.path])
        XCTAssertEqual(run.status, 0, run.error)
        let lines = run.output.split(separator: "\n")
        XCTAssertEqual(lines.count, 5, run.output)
        for line in lines {
            // "p99: 123.456 us (latency_us.p99: 123.456)"
            let words = line.split(separator: " ")
            let decoded = try XCTUnwrap(Double(words[1]), String(line))
            let reported = try XCTUnwrap(Double(words[4].dropLast()), String(line))
            XCTAssertEqual(decoded, reported, accuracy: 0.0015, String(line))
        }
        XCTAssertEqual(lines.map { String($0.split(separator: ":")[0]) }, ["p50", "p90", "p99", "p99_9", "p99_99"])
    }
}
