import LoadTest

/// loadtest's WebSocket frame encoder (`WebSocketFrame.writeClientFrame`) and masking, read back by its parser.
///
/// Input: byte 0 picks the opcode, how many fragments a message is sent in, and (its top four bits) whether
/// the payload is repeated past 65,535 bytes; bytes 1-4 the masking key,
/// bytes 5-10 the fragment boundaries; the rest is the payload. Each frame is written as the client writes it
/// (masked), then turned into the frame a server would send (the same frame unmasked, by the same `mask`), and
/// parsed. Properties: the frame has the size `clientFrameSize` says, a set MASK bit and a shortest-form
/// length; masking equals a byte-by-byte XOR and undoes itself; writing with the payload in place equals
/// writing it from a buffer; the parser gives back the same message (or the control frame), or the error the
/// RFC requires for it (a text that is not UTF-8, a control frame over 125 bytes, a close code that may not be
/// sent).
enum WebSocketRoundTripTarget {
    static let opcodes: [WebSocketOpcode] = [.text, .binary, .close, .ping, .pong]

    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        var input = FuzzInput(data)
        let selector = Int(input.byte())
        let opcode = opcodes[selector % opcodes.count]
        let key = UInt32(input.uint16()) << 16 | UInt32(input.uint16())
        let seeds = [input.uint16(), input.uint16(), input.uint16()]
        // Bits 4-7 all set: the payload repeated past 65,535 bytes, for the 64-bit length form (rarely: slow).
        let long = selector & 0xF0 == 0xF0 && !input.rest.isEmpty
        let bytes = long ? Array((0..<(65_536 + input.rest.count)).map { input.rest[$0 % input.rest.count] }) : Array(input.rest)
        let failure = bytes.withUnsafeBytes { payload -> PropertyFailure? in
            do throws(PropertyFailure) {
                try roundTrip(payload, opcode, selector, key, seeds)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    static func roundTrip(
        _ payload: UnsafeRawBufferPointer, _ opcode: WebSocketOpcode, _ selector: Int, _ key: UInt32, _ seeds: [Int]
    ) throws(PropertyFailure) {
        let fragments = opcode.isControl ? [payload] : pieces(payload, at: splitPoints(Array(seeds.prefix(selector / 5 % 4)), length: payload.count))

        var server: [UInt8] = []
        for (i, fragment) in fragments.enumerated() {
            let frameOpcode = i == 0 ? opcode : .continuation
            let frameKey = key &+ UInt32(i)
            let client = try clientFrame(frameOpcode, fin: i == fragments.count - 1, fragment, key: frameKey)
            server += try serverFrame(from: client, payload: fragment, key: frameKey)
        }

        var parser = WebSocketParser(maxMessage: 1 << 20)
        defer { parser.deallocate() }
        var got = WebSocketFramesTarget.Outcome()
        server.withUnsafeBytes { bytes in
            var rest = bytes
            do throws(WebSocketError) {
                while let event = try parser.next(&rest) { got.events.append(.init(event)) }
            } catch {
                got.error = error
            }
        }
        let expected = expectation(opcode, Array(payload))
        try check(got == expected, "\(opcode) of \(payload.count) bytes in \(fragments.count): parsed \(got), expected \(expected)")
    }

    /// The client frame `writeClientFrame` writes, both ways (from a buffer, and in place), checked.
    static func clientFrame(
        _ opcode: WebSocketOpcode, fin: Bool, _ payload: UnsafeRawBufferPointer, key: UInt32
    ) throws(PropertyFailure) -> [UInt8] {
        let size = WebSocketFrame.clientFrameSize(payloadCount: payload.count)
        var frame = [UInt8](repeating: 0xEE, count: size)
        let written = frame.withUnsafeMutableBytes {
            WebSocketFrame.writeClientFrame(opcode, fin: fin, payload: payload, payloadCount: payload.count,
                                            maskKey: key, into: $0.baseAddress!)
        }
        try check(written == size, "wrote \(written) bytes, clientFrameSize says \(size)")
        var inPlace = [UInt8](repeating: 0, count: size)
        let offset = size - payload.count
        inPlace.replaceSubrange(offset..<size, with: payload)
        inPlace.withUnsafeMutableBytes {
            _ = WebSocketFrame.writeClientFrame(opcode, fin: fin, payload: nil, payloadCount: payload.count,
                                                maskKey: key, into: $0.baseAddress!)
        }
        try check(inPlace == frame, "the frame written in place differs from the one written from a buffer")
        try check(frame[0] == (fin ? 0x80 : 0) | opcode.rawValue, "first byte \(frame[0])")
        try check(frame[1] & 0x80 != 0, "a client frame without its MASK bit")
        let code = Int(frame[1] & 0x7F)
        let expectedCode = payload.count < 126 ? payload.count : payload.count <= 0xFFFF ? 126 : 127
        try check(code == expectedCode, "length code \(code) for \(payload.count) bytes")
        return frame
    }

    /// The same frame as a server sends it (unmasked), its payload unmasked with `mask` and checked against a
    /// byte-by-byte XOR and against the original.
    static func serverFrame(
        from client: [UInt8], payload: UnsafeRawBufferPointer, key: UInt32
    ) throws(PropertyFailure) -> [UInt8] {
        let keyOffset = client.count - payload.count - 4
        let keyBytes = Array(client[keyOffset..<keyOffset + 4])
        try check(keyBytes == [UInt8(key >> 24), UInt8(key >> 16 & 0xFF), UInt8(key >> 8 & 0xFF), UInt8(key & 0xFF)],
                  "masking key bytes \(keyBytes) for \(key)")
        var body = Array(client[(keyOffset + 4)...])
        let xored = body.enumerated().map { $0.element ^ keyBytes[$0.offset % 4] }
        try check(xored.elementsEqual(payload), "the masked payload is not the payload XOR the key")
        body.withUnsafeMutableBytes { WebSocketFrame.mask($0.baseAddress!, count: $0.count, key: key) }
        try check(body.elementsEqual(payload), "masking twice does not give the payload back")
        var frame = Array(client[..<keyOffset])
        frame[1] &= 0x7F
        return frame + body
    }

    /// What the parser must make of a whole message (or control frame) with `opcode` and `payload`.
    static func expectation(_ opcode: WebSocketOpcode, _ payload: [UInt8]) -> WebSocketFramesTarget.Outcome {
        var outcome = WebSocketFramesTarget.Outcome()
        let validText = { (bytes: ArraySlice<UInt8>) in String(validating: bytes, as: UTF8.self) != nil }
        switch opcode {
        case .text, .binary, .continuation:
            if opcode == .text && !validText(payload[...]) {
                outcome.error = .invalidUTF8
            } else {
                outcome.events = [.message(text: opcode == .text, payload)]
            }
        case _ where payload.count > 125:
            outcome.error = .controlTooLong(UInt64(payload.count))
        case .ping:
            outcome.events = [.ping(payload)]
        case .pong:
            outcome.events = [.pong(payload)]
        case .close:
            if payload.isEmpty {
                outcome.events = [.close(code: nil, reason: [])]
            } else if payload.count == 1 {
                outcome.error = .badClose(nil)
            } else {
                let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
                if !WebSocketParser.maySend(closeCode: code) {
                    outcome.error = .badClose(code)
                } else if !validText(payload[2...]) {
                    outcome.error = .invalidUTF8
                } else {
                    outcome.events = [.close(code: code, reason: Array(payload[2...]))]
                }
            }
        }
        return outcome
    }
}
