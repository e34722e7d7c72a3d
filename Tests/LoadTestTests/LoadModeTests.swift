import Foundation
@testable import LoadTest
import XCTest

/// The modes as values: each described once, their options owned by one set each, and the runner and the
/// loop worker asking the value instead of comparing modes.
final class LoadModeTests: XCTestCase {
    private static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/LoadTest")

    func testEveryModeIsNamedOnceAndFoundByItsName() {
        let names = LoadMode.all.map(\.name)
        XCTAssertEqual(Set(names).count, names.count, "two modes share a name: \(names)")
        for mode in LoadMode.all {
            XCTAssertEqual(LoadMode(rawValue: mode.name), mode)
            XCTAssertTrue(CommandLineParser.usage.contains(mode.summary), "--help lacks \(mode.name)'s summary")
            XCTAssertEqual(LoadMode.reporting(mode.resultName)?.name, mode.name)
        }
        XCTAssertEqual(LoadMode(rawValue: "demo")?.resultName, "echo")
        XCTAssertNil(LoadMode(rawValue: "bogus"))
    }

    func testEachModeFlagBelongsToOneSetAndAppearsInTheHelp() throws {
        var owner: [String: String] = [:]
        for options in ModeOptions.all {
            for flag in options.flags {
                XCTAssertNil(owner[flag], "\(flag) is in two option sets")
                owner[flag] = options.flags[0]
                XCTAssertTrue(CommandLineParser.usage.contains("  \(flag) "), "--help lacks \(flag)")
            }
        }
        // A flag of another mode's set is refused, naming the modes that take it.
        XCTAssertThrowsError(try CommandLineParser.parse(["udp", "--port", "9", "--close", "fin"])) { error in
            XCTAssertTrue("\(error)".contains("--close applies to connect mode"), "\(error)")
        }
    }

    func testTheRunnerAndTheWorkerCompareNoModes() throws {
        for file in ["Core/LoadRunner.swift", "Core/LoopWorker.swift"] {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            XCTAssertNil(text.range(of: #"mode\s*[=!]=|case \.(echo|demo|stream|connect|idle|http|udp)\b"#,
                                    options: .regularExpression), "\(file) tests the mode")
        }
    }

    /// Reports, charts, thresholds, merges, comparisons and the parser ask a mode's traits: no file but a
    /// mode's own (`LoadMode+X.swift`) compares a mode, or a result's mode, with a name.
    func testNoFileButAModesOwnComparesModeNames() throws {
        let files = try XCTUnwrap(FileManager.default.enumerator(atPath: Self.sources.path))
            .compactMap { $0 as? String }
        let modes = "echo|demo|stream|connect|idle|http|udp|tcp|ws"
        let pattern = #"mode\s*[=!]=\s*("|\.("# + modes + #")\b)|\$0\s*[=!]=\s*\.("# + modes + #")\b"#
            + #"|switch \w+\.mode\b"#
        for file in files where file.hasSuffix(".swift") && !file.contains("LoadMode+") {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            if let range = text.range(of: pattern, options: .regularExpression) {
                XCTFail("\(file) compares a mode by name: \(text[range])")
            }
        }
    }

    /// The program's exit statuses are ``ExitStatus``'s, never a number written where it returns.
    func testTheProgramReturnsNoLiteralExitStatus() throws {
        for file in ["CLI/LoadTestMain.swift", "Compare/CompareCommand.swift"] {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            XCTAssertNil(text.range(of: #"(return|exit\()\s*[0-9]"#, options: .regularExpression),
                         "\(file) returns a literal exit status")
        }
    }

    func testNoLineInLoadTestIsLongerThan120Characters() throws {
        let files = try XCTUnwrap(FileManager.default.enumerator(atPath: Self.sources.path)).compactMap { $0 as? String }
        XCTAssertGreaterThan(files.count, 30)
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.count > 120 {
                XCTFail("\(file):\(i + 1) is \(line.count) characters long")
            }
        }
    }

    func testShortFlagsTakeTheEqualsFormToo() throws {
        guard case .run(let config) = try CommandLineParser.parse(["echo", "-p=9000", "--connections=3", "-c", "4"])
        else { return XCTFail() }
        XCTAssertEqual(config.port, 9000)
        XCTAssertEqual(config.connections, 4)
    }
}
