import Foundation
import XCTest

@testable import LoopSocket

/// `ReadOp.feed`, the logic that turns arriving chunks into completed reads, driven directly with every way
/// of splitting a stream into chunks.
final class ReadOpTests: XCTestCase {
    /// What driving one read with a sequence of chunks produced.
    struct Run: Equatable {
        var completed: Data?
        var maxedOut = false
        /// Bytes of the chunks the read did not take (they go to the prebuffer for the next read).
        var leftover = Data()
        /// The `used` counts of `.needMore` outcomes (partial progress reported to the delegate).
        var partials: [Int] = []
    }

    private func makeOp(_ kind: ReadOp.Kind, maxLength: Int = 0) -> ReadOp {
        ReadOp(kind: kind, maxLength: maxLength, tag: 0, timeout: -1, id: 0)
    }

    /// Feeds `chunks` in order, as the socket does: after completion, the rest is leftover.
    private func drive(_ op: ReadOp, _ chunks: [[UInt8]]) -> Run {
        var op = op
        var run = Run()
        for chunk in chunks {
            if run.completed != nil || run.maxedOut {
                run.leftover.append(contentsOf: chunk)
                continue
            }
            let outcome = chunk.withUnsafeBytes { op.feed($0) }
            switch outcome {
            case .needMore(let used):
                XCTAssertEqual(used, chunk.count, "a read that wants more takes the whole chunk")
                run.partials.append(used)
            case .complete(let used, let data):
                run.completed = data
                run.leftover.append(contentsOf: chunk[used...])
            case .maxedOut:
                run.maxedOut = true
            case .blocked:
                XCTFail("only startTLS's marker blocks")
            }
        }
        return run
    }

    /// Every split of `bytes` into two chunks, plus byte-by-byte and all-at-once.
    private func allSplits(_ bytes: [UInt8]) -> [[[UInt8]]] {
        var result: [[[UInt8]]] = [[bytes], bytes.map { [$0] }]
        for i in 1..<bytes.count { result.append([Array(bytes[..<i]), Array(bytes[i...])]) }
        return result
    }

    /// Every split of `bytes` into three chunks.
    private func allThreeWaySplits(_ bytes: [UInt8]) -> [[[UInt8]]] {
        var result: [[[UInt8]]] = []
        for i in 1..<bytes.count {
            for j in (i + 1)..<bytes.count {
                result.append([Array(bytes[..<i]), Array(bytes[i..<j]), Array(bytes[j...])])
            }
        }
        return result
    }

    // MARK: Separators

    func testSeparatorSplitAtEveryByteBoundary() {
        let cases: [(message: String, separator: String)] = [
            ("hello\r\n", "\r\n"),
            ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", "\r\n\r\n"),
            ("x\n", "\n"),
            ("\n", "\n"),
            ("aaab", "aab"),                 // the separator overlaps itself: a naive restart misses it
            ("abababac", "ababac"),
            ("--b--bo--bou--boundary", "--boundary"),
            ("\r\r\n", "\r\n"),
        ]
        let tail = Array("TAIL\r\n".utf8)
        for (message, separator) in cases {
            let expected = Data(message.utf8)
            let stream = Array(message.utf8) + tail
            for chunks in allSplits(stream) + allThreeWaySplits(stream) {
                let run = drive(makeOp(.separator(Data(separator.utf8))), chunks)
                XCTAssertEqual(run.completed, expected, "\(message.debugDescription) split as \(chunks.map(\.count))")
                XCTAssertEqual(run.leftover, Data(tail), "\(message.debugDescription) split as \(chunks.map(\.count))")
                XCTAssertFalse(run.maxedOut)
            }
        }
    }

    func testSeparatorFirstOccurrenceWins() {
        for chunks in allSplits(Array("a;b;c;".utf8)) {
            let run = drive(makeOp(.separator(Data(";".utf8))), chunks)
            XCTAssertEqual(run.completed, Data("a;".utf8))
            XCTAssertEqual(run.leftover, Data("b;c;".utf8))
        }
    }

    func testSeparatorPartialProgressCountsEveryByteTaken() {
        let run = drive(makeOp(.separator(Data("END".utf8))), [Array("ab".utf8), Array("cE".utf8), Array("N".utf8), Array("Dx".utf8)])
        XCTAssertEqual(run.partials, [2, 2, 1])
        XCTAssertEqual(run.completed, Data("abcEND".utf8))
        XCTAssertEqual(run.leftover, Data("x".utf8))
    }

    func testSeparatorWithMaxLength() {
        let message = Array("12345\n".utf8)
        for chunks in allSplits(message + Array("more".utf8)) {
            // Exactly maxLength bytes ending in the separator: success.
            let exact = drive(makeOp(.separator(Data("\n".utf8)), maxLength: 6), chunks)
            XCTAssertEqual(exact.completed, Data(message), "\(chunks.map(\.count))")
            XCTAssertEqual(exact.leftover, Data("more".utf8))
            // One byte short: maxed out, never completed, never more than maxLength taken.
            let short = drive(makeOp(.separator(Data("\n".utf8)), maxLength: 5), chunks)
            XCTAssertTrue(short.maxedOut, "\(chunks.map(\.count))")
            XCTAssertNil(short.completed)
            XCTAssertLessThanOrEqual(short.partials.reduce(0, +), 5)
        }
        // A two-byte separator straddling the limit is not found within it.
        for chunks in allSplits(Array("1234\r\n".utf8)) {
            let run = drive(makeOp(.separator(Data("\r\n".utf8)), maxLength: 5), chunks)
            XCTAssertTrue(run.maxedOut, "\(chunks.map(\.count))")
        }
    }

    func testSeparatorScanDoesNotRescan() {
        // After many chunks without the separator, `scanned` sits just before the end of the buffer.
        var op = makeOp(.separator(Data("XYZ".utf8)))
        for _ in 0..<100 {
            let outcome = Array("abcdefgh".utf8).withUnsafeBytes { op.feed($0) }
            guard case .needMore = outcome else { return XCTFail("unexpected \(outcome)") }
        }
        XCTAssertEqual(op.buffer.count, 800)
        XCTAssertEqual(op.scanned, 800 - 3 + 1, "only the last separator-length-minus-one bytes are searched again")
        let outcome = Array("XYZ".utf8).withUnsafeBytes { op.feed($0) }
        guard case .complete(let used, let data) = outcome else { return XCTFail("unexpected \(outcome)") }
        XCTAssertEqual(used, 3)
        XCTAssertEqual(data.count, 803)
    }

    // MARK: Lengths and available bytes

    func testLengthSplitAtEveryByteBoundary() {
        let stream = Array("0123456789abc".utf8)
        for chunks in allSplits(stream) + allThreeWaySplits(stream) {
            let run = drive(makeOp(.length(10)), chunks)
            XCTAssertEqual(run.completed, Data("0123456789".utf8), "\(chunks.map(\.count))")
            XCTAssertEqual(run.leftover, Data("abc".utf8))
            XCTAssertLessThan(run.partials.reduce(0, +), 10, "the completing chunk is not reported as partial progress")
        }
    }

    func testAvailableTakesWhatIsThereUpToMaxLength() {
        let all = drive(makeOp(.available), [Array("abcdef".utf8)])
        XCTAssertEqual(all.completed, Data("abcdef".utf8))
        let capped = drive(makeOp(.available, maxLength: 4), [Array("abcdef".utf8)])
        XCTAssertEqual(capped.completed, Data("abcd".utf8))
        XCTAssertEqual(capped.leftover, Data("ef".utf8))
        let one = drive(makeOp(.available, maxLength: 4), [Array("a".utf8), Array("bc".utf8)])
        XCTAssertEqual(one.completed, Data("a".utf8), "available completes with the first chunk")
    }

    func testProgress() {
        var op = makeOp(.length(8))
        _ = Array("abc".utf8).withUnsafeBytes { op.feed($0) }
        XCTAssertEqual(op.progress.done, 3)
        XCTAssertEqual(op.progress.total, 8)
        var separated = makeOp(.separator(Data("\n".utf8)), maxLength: 100)
        _ = Array("abcd".utf8).withUnsafeBytes { separated.feed($0) }
        XCTAssertEqual(separated.progress.done, 4)
        XCTAssertEqual(separated.progress.total, 100)
    }

    // MARK: find

    func testFind() {
        func find(_ needle: String, _ haystack: String, from start: Int = 0) -> Int? {
            Array(needle.utf8).withUnsafeBytes { n in
                Array(haystack.utf8).withUnsafeBytes { h in ReadOp.find(n, in: h, from: start) }
            }
        }
        XCTAssertEqual(find("ab", "xxab"), 2)
        XCTAssertEqual(find("ab", "abab", from: 1), 2)
        XCTAssertEqual(find("aab", "aaab"), 1)
        XCTAssertEqual(find("a", "a"), 0)
        XCTAssertNil(find("ab", "a"))
        XCTAssertNil(find("ab", "ba"))
        XCTAssertNil(find("", "abc"))
        XCTAssertNil(find("abc", "abc", from: 1))
        XCTAssertNil(find("b", "ab", from: 5), "a start past the end finds nothing")
        XCTAssertEqual(find("\r\n\r\n", "a\r\nb\r\n\r\n"), 4)
    }
}
