import FuzzTargets
import HTTPHello
import XCTest

/// One test per finding of the fuzzers: its saved input (Tests/Fuzz/Regressions/<target>/<name>) through its
/// target, and the behaviour it broke, asserted directly.
final class FuzzRegressionTests: XCTestCase {
    func replay(_ target: String, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let fuzzTarget = try XCTUnwrap(FuzzTarget.named(target), file: file, line: line)
        let path = "\(FuzzCorpusTests.fuzzDirectory)/Regressions/\(target)/\(name)"
        XCTAssertTrue(FileManager.default.fileExists(atPath: path), path, file: file, line: line)
        XCTAssertNil(FuzzReplay.replay(path, through: fuzzTarget), file: file, line: line)
    }

    /// A client that sends only line ends: http-hello skipped them as the empty lines allowed before a request
    /// line, and kept buffering them without bound; they count toward the head limit now.
    func testHTTPHeadEndlessEmptyLinesAreRefusedAtTheLimit() throws {
        try replay("http-head", "endless-empty-lines")
        let lineEnds = Array(String(repeating: "\r\n", count: 100).utf8)
        let outcome = lineEnds.withUnsafeBufferPointer { HTTPHeadParser.parse($0, maxLength: 32) }
        XCTAssertEqual(outcome, .failed(.headerTooLarge))
        let request = Array(("\r\n" + "GET / HTTP/1.1\r\nHost: a\r\n\r\n").utf8)
        let fits = request.withUnsafeBufferPointer { HTTPHeadParser.parse($0, maxLength: request.count) }
        guard case .complete(_, let length) = fits else { return XCTFail("\(fits)") }
        XCTAssertEqual(length, request.count)
        let over = request.withUnsafeBufferPointer { HTTPHeadParser.parse($0, maxLength: request.count - 1) }
        XCTAssertEqual(over, .failed(.headerTooLarge))
    }
}
