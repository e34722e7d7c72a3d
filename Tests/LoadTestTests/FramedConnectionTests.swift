@testable import LoadTest
import XCTest

/// tcp mode's connection framing replies however TCP cuts them: a reply that arrives a byte at a time, several
/// in one read, a read that ends inside one. Each reply is checked, so a byte lost, repeated or taken from the
/// wrong place between two reads is a `check` error.
final class FramedConnectionTests: XCTestCase {
    /// Requests of 8 bytes in rotation; an echo server answers each with itself.
    private static let requests = ["abcdefg\n", "hijklmn\n", "opqrstu\n"].map { Array($0.utf8) }

    private func run(_ behavior: RawTestServer.Behavior, pipeline: Int, format: TCPReplyFormat) throws -> RunResult {
        let server = try RawTestServer(behavior)
        defer { server.stop() }
        return try shortRun(.tcp, port: server.port, connections: 3, duration: 0.5) { config in
            config.pipeline = pipeline
            config.tcp.requests = Self.requests
            config.tcp.formats = [format]
            config.checks.bodies = Self.requests
        }
    }

    private func assertWholeReplies(_ result: RunResult, atLeast: UInt64, line: UInt = #line) {
        XCTAssertGreaterThan(result.requests, atLeast, line: line)
        XCTAssertEqual(result.errors.total, 0, "\(result.errors)", line: line)
        XCTAssertEqual(result.bytes, result.requests * 8, "every reply framed whole", line: line)
    }

    func testRepliesSplitAtEveryByte() throws {
        assertWholeReplies(try run(.echo(chunk: 1), pipeline: 1, format: .until([10])), atLeast: 10)
        assertWholeReplies(try run(.echo(chunk: 1), pipeline: 4, format: .length(8)), atLeast: 10)
    }

    func testSeveralRepliesPerReadAndReadsEndingInsideOne() throws {
        // 12-byte sends of 8-byte replies: a read holds one reply and half of the next, or several sends.
        assertWholeReplies(try run(.echo(chunk: 12), pipeline: 6, format: .until([10])), atLeast: 10)
        // 20-byte sends: two whole replies and half of one, the rest with the next.
        assertWholeReplies(try run(.echo(chunk: 20), pipeline: 5, format: .length(8)), atLeast: 10)
        // The whole pipeline in one send.
        assertWholeReplies(try run(.batch(bytes: 4 * 8), pipeline: 4, format: .until([10])), atLeast: 10)
    }

    func testAChangedByteFailsTheCheckOfItsReplyOnly() throws {
        // Byte 13 of each connection's stream: the sixth of its second reply.
        let result = try run(.corruptAt(offset: 13), pipeline: 2, format: .length(8))
        XCTAssertEqual(result.errors.byKind["check"], 3, "one bad reply per connection: \(result.errors)")
        XCTAssertEqual(result.errors.total, 3, "\(result.errors)")
    }
}
