import Foundation
import XCTest
@testable import LoadTest

/// `loadtest compare`'s command line, and the program: table, JSON, SVG and exit status.
final class CompareCommandTests: XCTestCase {
    func testTheTwoFormsAndTheOptionsParse() throws {
        let short = try CompareCommand.parse(["a.json", "dir/", "--confidence", "99", "--fail-if", "slower", "-q"])
        XCTAssertEqual(short.base, ["a.json"])
        XCTAssertEqual(short.new, ["dir/"])
        XCTAssertEqual(short.confidence, 0.99)
        XCTAssertEqual(short.gate, CompareFigure.allCases)
        XCTAssertTrue(short.quiet)

        let named = try CompareCommand.parse(["--base", "a1", "a2", "--new", "b1", "b2", "b3", "--confidence=0.9",
                                              "--fail-if=slower:p99,throughput,p99", "--json", "-", "--svg", "c.svg"])
        XCTAssertEqual(named.base, ["a1", "a2"])
        XCTAssertEqual(named.new, ["b1", "b2", "b3"])
        XCTAssertEqual(named.confidence, 0.9)
        XCTAssertEqual(named.gate, [.p99, .throughput])
        XCTAssertEqual(named.jsonPath, "-")
        XCTAssertEqual(named.svgPath, "c.svg")
        XCTAssertNil(try CompareCommand.parse(["a", "b"]).gate)
        XCTAssertEqual(try CompareCommand.parse(["a", "b"]).confidence, 0.95)
        XCTAssertTrue(try CompareCommand.parse(["--help"]).help)
    }

    func testMistakesAreSaid() {
        for (arguments, message) in [
            (["a.json"], "compare needs two sides, 1 given"),
            ([], "compare needs two sides, none"),
            (["a", "b", "c"], "compare needs two sides, 3 given"),
            (["x", "--base", "a", "--new", "b"], "'x' belongs to no side"),
            (["--base", "a"], "compare needs reports on both sides"),
            (["a", "b", "--confidence", "100"], "--confidence must lie between 50 and 99.99"),
            (["a", "b", "--confidence", "high"], "--confidence takes a percentage"),
            (["a", "b", "--fail-if", "faster"], "--fail-if takes slower"),
            (["a", "b", "--fail-if", "slower:p95"], "--fail-if: no figure 'p95'"),
            (["a", "b", "--json", "-", "--svg", "-"], "cannot both go to standard output"),
            (["a", "b", "--mixed"], "unknown option '--mixed' for compare"),
            (["a", "b", "--json"], "--json needs a value"),
        ] {
            XCTAssertThrowsError(try CompareCommand.parse(arguments), "\(arguments)") { error in
                XCTAssertTrue("\(error)".contains(message), "\(arguments): \(error)")
            }
        }
    }

    /// Writes `count` reports per side into directories `base` and `new` of a fresh temporary directory.
    private func reports(newLatency: Double, count: Int = 5) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("compare-\(UUID().uuidString)")
        var sim = SyntheticRuns(seed: 42, cv: 0.02)
        for (side, latency) in [("base", 1.0), ("new", newLatency)] {
            let folder = directory.appendingPathComponent(side)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for i in 0..<count {
                try sim.report(latency: latency).jsonData().write(to: folder.appendingPathComponent("run\(i).json"))
            }
        }
        return directory
    }

    func testTheProgramsExitStatusFollowsTheVerdicts() throws {
        let loadtest = ChildProcess.product("loadtest")
        let slower = try reports(newLatency: 1.3)
        defer { try? FileManager.default.removeItem(at: slower) }
        let json = slower.appendingPathComponent("c.json").path, svg = slower.appendingPathComponent("c.svg").path
        let failed = try ChildProcess.run(
            loadtest, ["compare", slower.appendingPathComponent("base").path, slower.appendingPathComponent("new").path,
                       "--fail-if", "slower", "--json", json, "--svg", svg])
        XCTAssertEqual(failed.status, 1, failed.output + failed.error)
        XCTAssertTrue(failed.output.contains("5 base runs, 5 new runs (echo)"), failed.output)
        XCTAssertTrue(failed.output.contains("--fail-if slower (any figure): FAILED: p50, p90, p99, p99.9 got worse"),
                      failed.output)
        let report = try JSONDecoder().decode(CompareReport.self, from: Data(contentsOf: URL(fileURLWithPath: json)))
        XCTAssertEqual(report.failed, ["p50", "p90", "p99", "p99.9"])
        XCTAssertEqual(report.base.files.count, 5)
        XCTAssertTrue(report.base.files[0].hasSuffix("base/run0.json"), "\(report.base.files)")
        XCTAssertTrue(try String(contentsOfFile: svg, encoding: .utf8).hasPrefix("<svg"))

        // Only throughput judged: it did not change, so the status is 0 (and the table is still printed).
        let base = (0..<5).map { slower.appendingPathComponent("base/run\($0).json").path }
        let new = (0..<5).map { slower.appendingPathComponent("new/run\($0).json").path }
        let passed = try ChildProcess.run(loadtest, ["compare", "--base"] + base + ["--new"] + new
                                                     + ["--fail-if", "slower:throughput"])
        XCTAssertEqual(passed.status, 0, passed.output + passed.error)
        XCTAssertTrue(passed.output.contains("--fail-if slower (throughput): passed"), passed.output)

        XCTAssertEqual(try ChildProcess.run(loadtest, ["compare", base[0], base[1], new[0], "-q"]).status, 2,
                       "three plain arguments are a mistake")
        // Without --fail-if a slower build still exits 0: compare reports. The JSON alone on standard output.
        let quiet = try ChildProcess.run(loadtest, ["compare", "--base"] + base + ["--new"] + new + ["--json", "-", "-q"])
        XCTAssertEqual(quiet.status, 0, quiet.error)
        XCTAssertEqual(try JSONDecoder().decode(CompareReport.self, from: Data(quiet.output.utf8)).figures.count, 6)
        XCTAssertEqual(quiet.error, "")

        let unreadable = try ChildProcess.run(loadtest, ["compare", json, base[0]])
        XCTAssertEqual(unreadable.status, 2)
        XCTAssertTrue(unreadable.error.contains("is not a loadtest JSON result"), unreadable.error)
        let missing = try ChildProcess.run(loadtest, ["compare", "/nonexistent/a.json", base[0]])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.error.contains("cannot read /nonexistent/a.json"), missing.error)
        let help = try ChildProcess.run(loadtest, ["compare", "--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.output.hasPrefix("usage: loadtest compare BASE NEW"), help.output)
    }
}
