import Foundation
import XCTest
@testable import LoadTest

/// What a run does at its edges, as a user meets them from the shell: an output path that cannot be written,
/// a server PID that names no process, the server's memory in the report, Ctrl-C before the load begins.
final class RunEdgeTests: XCTestCase {
    /// A path whose directory exists and passes `access(2)` for root, but where no file can be made: found
    /// before the run, not after it.
    func testOutputPathsAreOpenedBeforeTheRun() throws {
        XCTAssertEqual(FileIO.problemWriting("/proc/loadtest-x.json"), "cannot write /proc/loadtest-x.json: No such file or directory")
        // The check leaves no file behind, and an existing file as it was.
        let fresh = "/tmp/loadtest-check-\(getpid()).json"
        XCTAssertNil(FileIO.problemWriting(fresh))
        XCTAssertNotEqual(access(fresh, F_OK), 0, "the check removes the file it made")
        let kept = "/tmp/loadtest-kept-\(getpid()).json"
        try "old".write(toFile: kept, atomically: false, encoding: .utf8)
        defer { unlink(kept) }
        XCTAssertNil(FileIO.problemWriting(kept))
        XCTAssertEqual(try String(contentsOfFile: kept, encoding: .utf8), "old")

        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let began = Date()
        let run = try ChildProcess.run(ChildProcess.product("loadtest"), [
            "echo", "--port", "\(server.port)", "-c", "2", "-d", "5", "--json", "/proc/loadtest-x.json",
        ], seconds: 30)
        XCTAssertEqual(run.status, 2, run.error)
        XCTAssertTrue(run.error.contains("cannot write /proc/loadtest-x.json"), run.error)
        XCTAssertFalse(run.output.contains("req/s"), "no run: \(run.output)")
        XCTAssertLessThan(Date().timeIntervalSince(began), 4)
    }

    func testAServerPIDThatNamesNoProcessIsRefused() {
        XCTAssertThrowsError(try CommandLineParser.parse(["idle", "--port", "9000", "--server-pid", "2147483647"])) { error in
            XCTAssertTrue("\(error)".contains("there is no process 2147483647"), "\(error)")
        }
        XCTAssertNoThrow(try CommandLineParser.parse(["idle", "--port", "9000", "--server-pid", "\(getpid())"]))
    }

    /// Idle mode is run for the server's memory per connection: the report says it (this test process holds
    /// the in-process server, so its own PID is the server's).
    func testIdleReportShowsTheServersMemory() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try shortRun(.idle, port: server.port, connections: 50, duration: 0.5) {
            $0.serverPID = getpid()
        }
        XCTAssertNotNil(result.serverProcess?.rssBeforeMiB)
        let report = ReportText.report(result)
        XCTAssertTrue(report.contains("server memory (pid \(getpid())): resident "), report)
        XCTAssertTrue(report.contains(" before the connections"), report)
        XCTAssertTrue(report.contains("with 50 connections open: "), report)
        XCTAssertTrue(report.contains(" KiB each"), report)
        let decoded = try RunResult.decode(try result.jsonData())
        XCTAssertEqual(decoded.serverProcess, result.serverProcess)
    }

    /// Ctrl-C while the connections wait for `--start-at`: nothing was measured, so no figures (no warm-up
    /// line, no report) and a status that is not success.
    func testInterruptWhileWaitingForTheStartTimeExitsWithAnError() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let startAt = Int(Date().timeIntervalSince1970) + 60
        let child = try ChildProcess(ChildProcess.product("loadtest"), [
            "echo", "--port", "\(server.port)", "-c", "2", "-l", "1", "-d", "1", "--start-at", "\(startAt)",
        ])
        XCTAssertTrue(child.waitForOutput(containing: "for the start time", seconds: 20), child.standardOutput)
        child.process.interrupt()
        let status = child.wait(seconds: 20)
        XCTAssertEqual(status, 2, "stdout: \(child.standardOutput) stderr: \(child.standardError)")
        XCTAssertTrue(child.standardError.contains("interrupted while waiting for the start time (--start-at)"), child.standardError)
        XCTAssertTrue(child.standardError.contains("nothing was measured"), child.standardError)
        XCTAssertFalse(child.standardOutput.contains("s] warm-up"), "no progress line: \(child.standardOutput)")
        XCTAssertFalse(child.standardOutput.contains("req/s"), child.standardOutput)
    }
}
