import LoadTest
import XCTest

/// A change judged against a baseline by comparison rather than by absolute figures: both sides run on the
/// same machine, interleaved, so a machine that is slower today slows both. Here the "change" is pipelining
/// (8 requests in flight per connection instead of 1), which must not lower throughput; in your suite the
/// two sides are the old and the new version of the code under test.
final class ComparisonPerfTests: XCTestCase {
    func testPipeliningDoesNotLowerThroughput() async throws {
        let server = try InProcessServer.echo()
        defer { try? server.stop() }
        var base = PerfSettings.closedLoop(.echo, port: server.port)
        base.duration = .seconds(1)
        var new = base
        new.pipeline = 8

        var baseReports: [LoadTest.Report] = []
        var newReports: [LoadTest.Report] = []
        for _ in 0..<2 {  // interleaved: a burst of noise hits both sides alike
            baseReports.append(try await LoadTest.run(base))
            newReports.append(try await LoadTest.run(new))
        }
        let comparison = try LoadTest.compare(base: baseReports, new: newReports)

        XCTAssertFalse(comparison.regressions.contains("throughput"), comparison.text)
        let throughput = try XCTUnwrap(comparison.changes.first { $0.figure == "throughput" })
        XCTAssertGreaterThan(throughput.new, throughput.base, comparison.text)
        XCTAssertEqual(baseReports.map(\.errors.total) + newReports.map(\.errors.total), [0, 0, 0, 0])
    }
}
