import XCTest

@testable import LoadTest

/// The frame codec against RFC 6455's examples (section 5.7), fragmentation, and each way a server frame is
/// refused.
final class WebSocketFrameTests: XCTestCase {
    /// An event with its payload copied out (the parser's payload is valid only until its next call).
    enum Event: Equatable {
        case message(text: Bool, [UInt8])
        case ping([UInt8]), pong([UInt8])
        case close(UInt16?, String)
    }

    /// Feeds `bytes` to a parser in pieces of `split` bytes; returns the events, and the error if one ended it.
    static func parse(_ bytes: [UInt8], split: Int = .max, maxMessage: Int = 1 << 20) -> ([Event], WebSocketError?) {
        var parser = WebSocketParser(maxMessage: maxMessage)
        defer { parser.deallocate() }
        var events: [Event] = []
        var thrown: WebSocketError?
        feedWebSocketBytes(bytes, split: split) { input in
            do {
                while let event = try parser.next(&input) {
                    switch event {
                    case .message(let text, let payload): events.append(.message(text: text, Array(payload)))
                    case .ping(let payload): events.append(.ping(Array(payload)))
                    case .pong(let payload): events.append(.pong(Array(payload)))
                    case .close(let code, let reason): events.append(.close(code, String(decoding: reason, as: UTF8.self)))
                    }
                }
                XCTAssertEqual(input.count, 0, "a nil event consumes its input")
                return true
            } catch {
                thrown = error as? WebSocketError
                return false
            }
        }
        return (events, thrown)
    }

    /// Parses whole, byte by byte and in 3-byte pieces, and checks all three agree.
    func assertParses(_ bytes: [UInt8], maxMessage: Int = 1 << 20, _ events: [Event], error: WebSocketError? = nil,
                      file: StaticString = #filePath, line: UInt = #line) {
        for split in [Int.max, 1, 3] {
            let (got, thrown) = Self.parse(bytes, split: split, maxMessage: maxMessage)
            XCTAssertEqual(got, events, "split \(split)", file: file, line: line)
            XCTAssertEqual(thrown, error, "split \(split)", file: file, line: line)
        }
    }

    let hello = Array("Hello".utf8)

    // MARK: RFC 6455 section 5.7

    func testUnmaskedTextFrame() {
        assertParses([0x81, 0x05] + hello, [.message(text: true, hello)])
    }

    func testFragmentedTextMessage() {
        assertParses([0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F], [.message(text: true, hello)])
    }

    func testPingWithPayload() {
        assertParses([0x89, 0x05] + hello, [.ping(hello)])
    }

    func testBinaryWith16BitAndWith64BitLength() {
        let short = (0..<256).map { UInt8(truncatingIfNeeded: $0) }
        assertParses([0x82, 0x7E, 0x01, 0x00] + short, [.message(text: false, short)])
        let long = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let (events, error) = Self.parse([0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0] + long, split: 1000)
        XCTAssertNil(error)
        XCTAssertEqual(events, [.message(text: false, long)])
    }

    func testMaskedClientFramesMatchTheRFCExamples() {
        // "A single-frame masked text message" and "a masked Pong", key 37 fa 21 3d.
        var out = [UInt8](repeating: 0, count: WebSocketFrame.clientFrameSize(payloadCount: 5))
        hello.withUnsafeBytes { payload in
            out.withUnsafeMutableBytes { buffer in
                let n = WebSocketFrame.writeClientFrame(.text, payload: payload, payloadCount: 5, maskKey: 0x37FA_213D, into: buffer.baseAddress!)
                XCTAssertEqual(n, 11)
            }
        }
        XCTAssertEqual(out, [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
        hello.withUnsafeBytes { payload in
            out.withUnsafeMutableBytes { buffer in
                _ = WebSocketFrame.writeClientFrame(.pong, payload: payload, payloadCount: 5, maskKey: 0x37FA_213D, into: buffer.baseAddress!)
            }
        }
        XCTAssertEqual(out, [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
    }

    func testClientFrameLengthsAndUnmaskingRoundTrip() {
        var keys = WebSocketMaskKeys(seed: 42)
        for count in [0, 1, 7, 8, 9, 125, 126, 127, 65535, 65536, 70001] {
            let payload = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) }
            var out = [UInt8](repeating: 0, count: WebSocketFrame.clientFrameSize(payloadCount: count))
            let key = keys.next()
            let written = payload.withUnsafeBytes { p in
                out.withUnsafeMutableBytes { WebSocketFrame.writeClientFrame(.binary, payload: p, payloadCount: count, maskKey: key, into: $0.baseAddress!) }
            }
            XCTAssertEqual(written, out.count)
            let headerLength = WebSocketFrame.payloadOffset(payloadCount: count)
            XCTAssertEqual(out[0], 0x82)
            XCTAssertEqual(out[1] & 0x80, 0x80, "masked")
            XCTAssertEqual(headerLength, count < 126 ? 6 : count < 65536 ? 8 : 14, "the shortest length form")
            // Unmask with the key in the frame, then read it as a server would see an unmasked frame.
            let frameKey = UInt32(out[headerLength - 4]) << 24 | UInt32(out[headerLength - 3]) << 16
                | UInt32(out[headerLength - 2]) << 8 | UInt32(out[headerLength - 1])
            XCTAssertEqual(frameKey, key)
            out.withUnsafeMutableBytes { WebSocketFrame.mask($0.baseAddress! + headerLength, count: count, key: key) }
            XCTAssertEqual(Array(out[headerLength...]), payload)
        }
    }

    /// Masking against the RFC's definition, byte by byte (section 5.3: byte i XOR key byte i mod 4), at every
    /// length around the 64-, 16- and 8-byte steps and at odd alignments.
    func testMaskingMatchesTheDefinitionByteByByte() {
        let key: UInt32 = 0x37FA_213D
        let keyBytes: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        for count in [0, 1, 3, 7, 8, 9, 15, 16, 17, 24, 31, 63, 64, 65, 72, 79, 80, 127, 128, 129, 200, 1000] {
            for alignment in 0..<3 {
                let original = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }
                var buffer = [UInt8](repeating: 0xEE, count: count + alignment + 1)
                buffer.replaceSubrange(alignment..<(alignment + count), with: original)
                buffer.withUnsafeMutableBytes { WebSocketFrame.mask($0.baseAddress! + alignment, count: count, key: key) }
                let expected = original.enumerated().map { $0.element ^ keyBytes[$0.offset % 4] }
                XCTAssertEqual(Array(buffer[alignment..<(alignment + count)]), expected, "\(count) bytes at +\(alignment)")
                XCTAssertEqual(buffer[count + alignment], 0xEE, "nothing past the end is touched")
            }
        }
    }

    func testMaskKeysDifferFrameToFrame() {
        var keys = WebSocketMaskKeys()
        let drawn = (0..<1000).map { _ in keys.next() }
        XCTAssertGreaterThan(Set(drawn).count, 990)
    }

    // MARK: Messages and control frames

    func testControlFramesBetweenFragments() {
        // "Hel" + ping + pong + "lo": the control frames come out first, then the joined message.
        let bytes: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6C, 0x89, 0x01, 0x41, 0x8A, 0x00, 0x80, 0x02, 0x6C, 0x6F]
        assertParses(bytes, [.ping([0x41]), .pong([]), .message(text: true, hello)])
    }

    func testManyFragmentsAndMessagesInARow() {
        var bytes: [UInt8] = [0x02, 0x01, 1]
        for i in 2..<100 { bytes += [0x00, 0x01, UInt8(i)] }
        bytes += [0x80, 0x00]
        bytes += [0x82, 0x02, 7, 8, 0x81, 0x00]
        assertParses(bytes, [.message(text: false, (1..<100).map { UInt8($0) }), .message(text: false, [7, 8]), .message(text: true, [])])
    }

    func testCloseFrames() {
        assertParses([0x88, 0x00], [.close(nil, "")])
        assertParses([0x88, 0x02, 0x03, 0xE8], [.close(1000, "")])
        assertParses([0x88, 0x06, 0x0F, 0xA0] + Array("bye!".utf8), [.close(4000, "bye!")])
        assertParses([0x88, 0x01, 0x03], [], error: .badClose(nil))
        assertParses([0x88, 0x02, 0x03, 0xED], [], error: .badClose(1005))
        assertParses([0x88, 0x02, 0x03, 0xEE], [], error: .badClose(1006))
        assertParses([0x88, 0x02, 0x07, 0xD0], [], error: .badClose(2000))
        assertParses([0x88, 0x03, 0x03, 0xE8, 0xFF], [], error: .invalidUTF8)
    }

    func testCloseCodesThatMayBeSent() {
        for code: UInt16 in [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4999] {
            XCTAssertTrue(WebSocketParser.maySend(closeCode: code), "\(code)")
        }
        for code: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535] {
            XCTAssertFalse(WebSocketParser.maySend(closeCode: code), "\(code)")
        }
    }

    // MARK: Each refusal

    func testMaskedServerFrame() {
        assertParses([0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58], [], error: .maskedFrame)
        XCTAssertEqual(WebSocketError.maskedFrame.kind, .wsMasked)
    }

    func testMalformedFrames() {
        assertParses([0xC1, 0x00], [], error: .reservedBits(0x40))
        assertParses([0x83, 0x00], [], error: .unknownOpcode(3))
        assertParses([0x8B, 0x00], [], error: .unknownOpcode(11))
        assertParses([0x09, 0x00], [], error: .fragmentedControl)
        assertParses([0x89, 0x7E, 0x00, 0x7E] + [UInt8](repeating: 0, count: 126), [], error: .controlTooLong(126))
        assertParses([0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 1], [], error: .lengthTooLarge)
        assertParses([0x82, 0x7E, 0x00, 0x05] + hello, [], error: .nonMinimalLength(5))
        assertParses([0x82, 0x7F, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF], [], error: .nonMinimalLength(65535))
        assertParses([0x80, 0x00], [], error: .unexpectedContinuation)
        assertParses([0x01, 0x01, 0x41, 0x81, 0x01, 0x41], [], error: .expectedContinuation)
        for error: WebSocketError in [.reservedBits(0x40), .unknownOpcode(3), .fragmentedControl, .controlTooLong(126),
                                      .lengthTooLarge, .nonMinimalLength(5), .unexpectedContinuation, .expectedContinuation, .badClose(nil)] {
            XCTAssertEqual(error.kind, .wsMalformed, "\(error)")
            XCTAssertEqual(error.closeCode, 1002)
        }
    }

    func testInvalidUTF8() {
        assertParses([0x81, 0x02, 0xC0, 0xAF], [], error: .invalidUTF8)  // overlong '/'
        assertParses([0x81, 0x03, 0xED, 0xA0, 0x80], [], error: .invalidUTF8)  // a surrogate
        assertParses([0x81, 0x04, 0xF4, 0x90, 0x80, 0x80], [], error: .invalidUTF8)  // past U+10FFFF
        // Split between fragments, a character is still one character; an unfinished one is an error.
        assertParses([0x01, 0x01, 0xE2, 0x80, 0x02, 0x82, 0xAC], [.message(text: true, [0xE2, 0x82, 0xAC])])
        assertParses([0x81, 0x02, 0xE2, 0x82], [], error: .invalidUTF8)
        // Binary messages are not checked.
        assertParses([0x82, 0x02, 0xC0, 0xAF], [.message(text: false, [0xC0, 0xAF])])
        XCTAssertEqual(WebSocketError.invalidUTF8.kind, .wsUTF8)
        XCTAssertEqual(WebSocketError.invalidUTF8.closeCode, 1007)
    }

    func testUTF8ValidationAgreesWithTheStandardLibrary() {
        var generator = WebSocketMaskKeys(seed: 7)
        for length in 0..<300 {
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            if length % 3 == 0 { bytes = bytes.map { $0 & 0x7F } }  // ASCII runs
            if length % 5 == 0 { bytes = Array(String(decoding: bytes, as: UTF8.self).utf8) }  // repaired: valid
            let expected = String(validating: bytes, as: UTF8.self) != nil
            XCTAssertEqual(bytes.withUnsafeBytes { WebSocketUTF8Validation.isValid($0) }, expected, "\(bytes)")
        }
    }

    func testMessageOverTheLimitIsRefusedFromItsHeader() {
        // One frame over the limit: refused before a byte of its payload arrives.
        assertParses([0x82, 0x7E, 0x01, 0x00], maxMessage: 255, [], error: .messageTooLarge(limit: 255))
        // Fragments that add up past it: refused at the fragment that would cross it.
        let fragment = [UInt8](repeating: 1, count: 100)
        assertParses([0x02, 100] + fragment + [0x00, 100] + fragment + [0x80, 100] + fragment, maxMessage: 250,
                     [], error: .messageTooLarge(limit: 250))
        assertParses([0x02, 100] + fragment + [0x80, 100] + fragment, maxMessage: 200, [.message(text: false, fragment + fragment)])
        XCTAssertEqual(WebSocketError.messageTooLarge(limit: 1).kind, .wsTooLarge)
        XCTAssertEqual(WebSocketError.messageTooLarge(limit: 1).closeCode, 1009)
    }

    func testBufferStaysWithinTheLimit() {
        // 1 MiB limit, a message of exactly 1 MiB in 1000-byte reads: the buffer grows to the limit, no further.
        let limit = 1 << 20
        let payload = [UInt8](repeating: 0x5A, count: limit)
        var parser = WebSocketParser(maxMessage: limit)
        defer { parser.deallocate() }
        let bytes: [UInt8] = [0x82, 0x7F, 0, 0, 0, 0, 0, 0x10, 0, 0] + payload
        var count = 0
        bytes.withUnsafeBytes { all in
            var start = 0
            while start < all.count {
                var input = UnsafeRawBufferPointer(rebasing: all[start..<min(all.count, start + 1000)])
                start += 1000
                while let event = try? parser.next(&input) {
                    if case .message(_, let p) = event { count = p.count }
                }
                XCTAssertLessThanOrEqual(parser.bufferedCapacity, limit)
            }
        }
        XCTAssertEqual(count, limit)
        XCTAssertEqual(parser.bufferedCapacity, limit)
    }
}
