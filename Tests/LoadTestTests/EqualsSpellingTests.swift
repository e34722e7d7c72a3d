import XCTest
@testable import LoadTest

/// `--flag=value` where the docs say it works: every run option, merge's, the short spellings (`-p=9000`); a
/// single dash before a long name (vegeta's `-rate=100`) is refused.
final class EqualsSpellingTests: XCTestCase {
    func testMergeTakesTheEqualsFormAsARunDoes() throws {
        XCTAssertEqual(
            try CommandLineParser.parse(["merge", "a.json", "--json=m.json", "--svg=m.svg", "-q", "--threshold=p99<1s"]),
            .merge(inputs: ["a.json"], jsonPath: "m.json", svgPath: "m.svg", quiet: true,
                   thresholds: [try Threshold.parse("p99<1s")]))
        XCTAssertEqual(try CommandLineParser.parse(["merge", "a.json", "b.json", "--json", "-", "--mixed"]),
                       .merge(inputs: ["a.json", "b.json"], jsonPath: "-", svgPath: nil, quiet: false, allowMixed: true))
        XCTAssertThrowsError(try CommandLineParser.parse(["merge", "a.json", "--json"])) {
            XCTAssertEqual("\($0)", "--json needs a value")
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["merge", "a.json", "-json=m.json"])) {
            XCTAssertEqual("\($0)", "unknown option '-json=m.json' for merge (try --help)")
        }
    }

    func testASingleDashLongNameIsRefused() {
        XCTAssertThrowsError(try CommandLineParser.parse(["http", "--url", "http://h/", "-rate=100"])) {
            XCTAssertEqual("\($0)", "unknown option '-rate=100' (try --help)")
        }
        XCTAssertEqual(try CommandLineParser.parse(["tcp", "-h"]), .modeHelp(.tcp))
    }
}
