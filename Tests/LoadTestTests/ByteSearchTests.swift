import XCTest
@testable import LoadTest

/// `UnsafeRawBufferPointer.firstIndex(of:from:)`, the substring search behind `--reply-until` and
/// `--expect-body`: `memchr` for the needle's first byte, then `memcmp` for the rest.
final class ByteSearchTests: XCTestCase {
    private func find(_ needle: String, in haystack: String, from: Int = 0) -> Int? {
        Array(haystack.utf8).withUnsafeBytes { $0.firstIndex(of: Array(needle.utf8), from: from) }
    }

    func testFindsTheFirstOccurrenceAtEveryPlace() {
        XCTAssertEqual(find("END\r\n", in: "END\r\nEND\r\n"), 0)
        XCTAssertEqual(find("END\r\n", in: "VALUE x\r\nEND\r\n"), 9)
        XCTAssertEqual(find("\n", in: "abc\n"), 3, "a one-byte needle at the very end")
        XCTAssertEqual(find("abc", in: "abc"), 0, "the whole buffer")
    }

    func testAFirstByteThatDoesNotStartAMatchIsSkipped() {
        XCTAssertEqual(find("aab", in: "aaab"), 1)
        XCTAssertEqual(find("\r\n\r\n", in: "x\r\ny\r\n\r\n"), 4)
    }

    func testStartsAtFrom() {
        XCTAssertEqual(find("ab", in: "ab-ab", from: 1), 3)
        XCTAssertEqual(find("ab", in: "ab-ab", from: 3), 3)
        XCTAssertNil(find("ab", in: "ab-ab", from: 4), "from leaves too little room")
    }

    func testNoMatch() {
        XCTAssertNil(find("abd", in: "abcab"), "a partial match at the end is none")
        XCTAssertNil(find("abcd", in: "abc"), "a needle longer than the buffer")
        XCTAssertNil(find("", in: "abc"), "an empty needle")
        XCTAssertNil(find("a", in: ""))
        XCTAssertNil(find("a", in: "abc", from: -1))
    }
}
