import Foundation
import XCTest
@testable import LoadTest

/// `--server-pid`: the server's memory from /proc/PID/status over the run, in the report and the JSON.
final class ServerSideStatsTests: XCTestCase {
    func testStatusFields() throws {
        let text = "Name:\techo-server\nState:\tS (sleeping)\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t3\n"
        XCTAssertEqual(ProcessStatus.parse(text), ProcessStatus(residentMiB: 10, highWaterMiB: 20, threads: 3))
        XCTAssertNil(ProcessStatus.parse("Name:\tzombie\nState:\tZ (zombie)\n"), "no VmRSS: nothing to report")
        let mine = try XCTUnwrap(ProcessStatus.read(pid: getpid()))
        XCTAssertGreaterThan(mine.residentMiB, 1)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(mine.highWaterMiB), mine.residentMiB)
        XCTAssertGreaterThan(try XCTUnwrap(mine.threads), 0)
        XCTAssertNil(ProcessStatus.read(pid: Int32.max))
    }

    func testTheServerProcessInTheReportAndTheJSON() throws {
        // The in-process echo server runs in this test process: its pid is ours.
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        for mode in [LoadMode.echo, .idle] {
            let result = try shortRun(mode, port: server.port, connections: 8, duration: 1.2) { $0.serverPID = getpid() }
            let p = try XCTUnwrap(result.serverProcess, "\(mode)")
            XCTAssertEqual(p.pid, getpid())
            let before = try XCTUnwrap(p.rssBeforeMiB), start = try XCTUnwrap(p.rssWindowStartMiB), end = try XCTUnwrap(p.rssEndMiB)
            XCTAssertGreaterThanOrEqual(p.rssPeakMiB, max(before, start, end))
            XCTAssertGreaterThan(try XCTUnwrap(p.threads), 1)
            XCTAssertNotNil(result.serverCPUSeconds)
            XCTAssertEqual(result.timeline.compactMap(\.serverRSSMiB).count, result.timeline.count)
            let text = ReportText.report(result)
            XCTAssertTrue(text.contains("  server memory (pid \(getpid())): resident "), text)
            XCTAssertTrue(text.contains(" before the connections, "), text)
            XCTAssertTrue(text.contains(" MiB peak (VmHWM "), text)
            XCTAssertTrue(text.contains("with 8 connections open: "), text)
            let json = try XCTUnwrap(JSONSerialization.jsonObject(with: result.jsonData()) as? [String: Any])
            let object = try XCTUnwrap(json["server_process"] as? [String: Any])
            XCTAssertEqual(Set(object.keys), ["pid", "rss_before_mib", "rss_window_start_mib", "rss_peak_mib", "rss_end_mib", "vm_hwm_mib", "threads"])
            XCTAssertEqual(try RunResult.decode(result.jsonData()), result)
            XCTAssertNil(try RunResult.merge([result, result]).serverProcess, "each machine's server is its own")
        }
    }
}
