@testable import LoadTest
import XCTest

/// tcp mode's framings, fed every split of their replies, and its command line.
final class ReplyFormatTests: XCTestCase {
    private func frame(_ format: TCPReplyFormat, _ bytes: [UInt8]) -> ReplyFraming {
        bytes.withUnsafeBytes { format.frame($0) }
    }

    /// Every prefix of `reply + extra` shorter than `reply` needs more; from `reply`'s length on, it frames as
    /// `expected`.
    private func assertFrames(_ format: TCPReplyFormat, _ reply: String, extra: String = "+NEXT\r\n",
                              _ expected: ReplyFraming, line: UInt = #line) {
        let bytes = Array(reply.utf8), all = bytes + Array(extra.utf8)
        for cut in 0..<bytes.count {
            XCTAssertEqual(frame(format, Array(all[..<cut])), .needMore, "cut at \(cut)", line: line)
        }
        for cut in bytes.count...all.count {
            XCTAssertEqual(frame(format, Array(all[..<cut])), expected, "cut at \(cut)", line: line)
        }
    }

    func testRESP2ValuesNestedArraysAndErrors() {
        assertFrames(.resp, "+OK\r\n", .reply(length: 5))
        assertFrames(.resp, ":-42\r\n", .reply(length: 6))
        assertFrames(.resp, "$5\r\nhe\r\no\r\n", .reply(length: 11))  // a bulk string may hold CRLF
        assertFrames(.resp, "$-1\r\n", .reply(length: 5))
        assertFrames(.resp, "*-1\r\n", .reply(length: 5))
        assertFrames(.resp, "*0\r\n", .reply(length: 4))
        let nested = "*2\r\n*2\r\n:1\r\n$1\r\na\r\n*1\r\n*1\r\n+x\r\n"
        assertFrames(.resp, nested, .reply(length: nested.utf8.count))
        assertFrames(.resp, "-ERR no\r\n", .errorReply(length: 9, "ERR no"))
        XCTAssertEqual(frame(.resp, Array("?x\r\n".utf8)), .malformed("not a RESP2 value: it starts with byte 63"))
        XCTAssertEqual(frame(.resp, Array("$3\r\nabcde".utf8)), .malformed("a RESP bulk string not followed by CRLF"))
        XCTAssertEqual(frame(.resp, Array(":1x\r\n".utf8)), .malformed("a RESP integer that is not a number"))
        let deep = String(repeating: "*1\r\n", count: 100) + ":1\r\n"
        XCTAssertEqual(frame(.resp, Array(deep.utf8)), .malformed("RESP arrays nested deeper than 64"))
    }

    func testDelimitersLengthsAndPrefixes() {
        assertFrames(.until(Array("END\r\n".utf8)), "VALUE k 0 1\r\nx\r\nEND\r\n", .reply(length: 21))
        assertFrames(.length(3), "abc", .reply(length: 3))
        assertFrames(.lengthPrefix(.u8, inclusive: false), "\u{3}abc", .reply(length: 4))
        assertFrames(.lengthPrefix(.u16be, inclusive: false), "\0\u{2}ab", .reply(length: 4))
        assertFrames(.lengthPrefix(.u16be, inclusive: true), "\0\u{4}ab", .reply(length: 4))
        assertFrames(.lengthPrefix(.u32be, inclusive: false), "\0\0\0\u{1}a", .reply(length: 5))
        assertFrames(.lengthPrefix(.u32le, inclusive: false), "\u{1}\0\0\0a", .reply(length: 5))
        guard case .malformed = frame(.lengthPrefix(.u16be, inclusive: true), [0, 1]) else {
            return XCTFail("an inclusive length smaller than the prefix is malformed")
        }
    }

    func testTheCommandLine() throws {
        guard case .run(let config) = try CommandLineParser.parse([
            "tcp", "-p", "6379", "--send", "SET k v\\r\\n", "--send-hex", "0a 0B", "--reply", "resp",
            "--reply-until", "\\x00", "--expect-body", "+OK\\r\\n", "--reply-max", "64k",
        ]) else { return XCTFail() }
        XCTAssertEqual(config.tcp.requests, [Array("SET k v\r\n".utf8), [10, 11]])
        XCTAssertEqual(config.tcp.formats, [.resp, .until([0])])
        XCTAssertEqual(config.checks.bodies, [Array("+OK\r\n".utf8)])
        XCTAssertEqual(config.tcp.replyMax, 65536)
        guard case .run(let prefixed) = try CommandLineParser.parse([
            "tcp", "-p", "1", "--send", "x", "--reply-length-prefix", "u32le", "--reply-prefix-inclusive",
        ]) else { return XCTFail() }
        XCTAssertEqual(prefixed.tcp.formats, [.lengthPrefix(.u32le, inclusive: true)])

        for (arguments, message) in [
            (["--reply", "resp"], "needs a request"),
            (["--send", "x"], "where a reply ends"),
            (["--send", "x", "--send", "y", "--reply", "resp", "--reply", "resp", "--reply", "resp"], "one per request"),
            (["--send", "\\q", "--reply", "resp"], "unknown escape"),
            (["--send-hex", "0g", "--reply", "resp"], "hexadecimal"),
            (["--send", "x", "--reply", "json"], "'resp'"),
            (["--send", "x", "--reply-length-prefix", "u24"], "u8, u16be"),
            (["--send", "x", "--reply", "resp", "--reply-prefix-inclusive"], "goes with --reply-length-prefix"),
            (["--send", "x", "--reply", "resp", "--expect-status", "200"], "http mode"),
        ] {
            XCTAssertThrowsError(try CommandLineParser.parse(["tcp", "--port", "1"] + arguments)) { error in
                XCTAssertTrue("\(error)".contains(message), "\(arguments): \(error)")
            }
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["echo", "--port", "1", "--send", "x"])) { error in
            XCTAssertTrue("\(error)".contains("apply to tcp mode"), "\(error)")
        }
    }
}
