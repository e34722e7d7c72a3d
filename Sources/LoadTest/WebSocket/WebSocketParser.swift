/// What the parser found in the server's bytes. A payload is valid until the parser's next call.
package enum WebSocketEvent {
    /// A whole message (its fragments joined); text is already checked to be UTF-8.
    case message(text: Bool, payload: UnsafeRawBufferPointer)
    case ping(UnsafeRawBufferPointer)
    case pong(UnsafeRawBufferPointer)
    /// A close frame: its status code (nil when the payload is empty) and its reason (UTF-8, checked).
    case close(code: UInt16?, reason: UnsafeRawBufferPointer)
}

/// Reads the frames a server sends (RFC 6455 section 5), incrementally: bytes are fed as they arrive, in any
/// split, and each complete message or control frame comes back as a ``WebSocketEvent``.
///
/// Memory stays bounded whatever the server sends: a header is at most 14 bytes, a control frame's payload
/// at most 125, and a message's fragments are gathered only up to `maxMessage` bytes. A frame that would take a
/// message past that is refused from its header, before its payload is read. A message that arrives whole in
/// one read is handed back in place, without a copy (the echo workload's common case).
///
/// Strict where the RFC says MUST: masked frames, reserved bits (no extension is ever negotiated), unknown
/// opcodes, fragmented or long control frames, continuations out of place, 64-bit lengths with the top bit
/// set, close payloads of one byte or with a status code that may not be sent, and invalid UTF-8 in text
/// messages and close reasons all fail the connection. Lengths not in their shortest form are refused too
/// (section 5.2 says the minimal number of bytes MUST be used); a server that pads them is broken, and
/// accepting them would only hide that.
package struct WebSocketParser {
    let maxMessage: Int

    private enum State {
        /// Gathering a frame header (``headerCount`` bytes of it are in ``header``).
        case header
        /// Reading a frame's payload: `remaining` bytes of it are still to come.
        case payload(opcode: WebSocketOpcode, fin: Bool, remaining: Int)
    }

    private var state = State.header
    /// The frame header, little-endian in two words: gathered here when split between reads (at most 10 bytes:
    /// a server frame is unmasked, and a masked one is refused as soon as its second byte is seen).
    private var header: (UInt64, UInt64) = (0, 0)
    private var headerCount = 0
    /// A fragmented message's opcode (text or binary) while its continuations are awaited; nil between messages.
    private var messageOpcode: WebSocketOpcode?
    /// The message gathered so far (fragments, or a frame split between reads), grown up to `maxMessage`.
    private var message: UnsafeMutableRawBufferPointer
    private var messageCount = 0
    /// A control frame's payload split between reads.
    private let control: UnsafeMutableRawPointer
    private var controlCount = 0

    package init(maxMessage: Int) {
        self.maxMessage = maxMessage
        message = .allocate(byteCount: min(maxMessage, 4096), alignment: 16)
        control = .allocate(byteCount: 125, alignment: 16)
    }

    /// Frees the buffers: the owner calls it once, when done with the parser.
    package func deallocate() {
        message.deallocate()
        control.deallocate()
    }

    /// Bytes held for messages, as the buffer has grown (never more than `maxMessage` rounded up to a power of
    /// two, nor less than 4 KiB).
    package var bufferedCapacity: Int { message.count }

    /// The echo workload's common case, without the general path's bookkeeping: a whole unfragmented binary
    /// frame at the start of `input`, header and payload, and no message under way. Returns its payload (in
    /// place) and consumes the frame; nil, consuming nothing, for anything else, which ``next(_:)`` then reads
    /// (and checks: a masked frame, reserved bits, a length not in its shortest form or over `maxMessage` all
    /// fall through to it).
    @inline(__always)
    package mutating func nextWholeBinaryMessage(_ input: inout UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard case .header = state, headerCount == 0, messageOpcode == nil, input.count >= 2 else { return nil }
        // FIN and binary, no reserved bits: 0x82. Unmasked with a 7-bit length: below 126.
        guard input.load(as: UInt8.self) == 0x82 else { return nil }
        let lengthCode = input.load(fromByteOffset: 1, as: UInt8.self)
        var length = Int(lengthCode)
        var offset = 2
        if lengthCode >= 126 {
            guard lengthCode == 126, input.count >= 4 else { return nil }
            length = Int(UInt16(bigEndian: input.loadUnaligned(fromByteOffset: 2, as: UInt16.self)))
            guard length >= 126 else { return nil }
            offset = 4
        }
        guard length <= maxMessage, input.count - offset >= length else { return nil }
        let base = input.baseAddress! + offset
        input = UnsafeRawBufferPointer(start: base + length, count: input.count - offset - length)
        return UnsafeRawBufferPointer(start: base, count: length)
    }

    /// The next event in `input`, consuming the bytes it used (and any it needed to gather); nil when every
    /// byte of `input` was consumed without completing one. A thrown error means the connection must fail.
    package mutating func next(_ input: inout UnsafeRawBufferPointer) throws(WebSocketError) -> WebSocketEvent? {
        while true {
            switch state {
            case .header:
                guard try readHeader(&input) else { return nil }
            case .payload(let opcode, let fin, let remaining):
                let isControl = opcode.isControl
                if (isControl ? controlCount : messageCount) == 0 && (isControl || fin) && input.count >= remaining {
                    // A whole control frame or message in this read: handed back in place.
                    let payload = UnsafeRawBufferPointer(rebasing: input[..<remaining])
                    input = UnsafeRawBufferPointer(rebasing: input[remaining...])
                    state = .header
                    return try event(opcode, payload)
                }
                // Gathered: a control frame's payload (at most 125 bytes), or a message's (at most maxMessage).
                let n = min(remaining, input.count)
                if n > 0 {
                    if isControl {
                        (control + controlCount).copyMemory(from: input.baseAddress!, byteCount: n)
                        controlCount += n
                    } else {
                        reserve(messageCount + remaining)
                        (message.baseAddress! + messageCount).copyMemory(from: input.baseAddress!, byteCount: n)
                        messageCount += n
                    }
                    input = UnsafeRawBufferPointer(rebasing: input[n...])
                }
                guard n == remaining else {
                    state = .payload(opcode: opcode, fin: fin, remaining: remaining - n)
                    return nil
                }
                state = .header
                if isControl {
                    defer { controlCount = 0 }
                    return try event(opcode, UnsafeRawBufferPointer(start: control, count: controlCount))
                }
                guard fin else {
                    if messageOpcode == nil { messageOpcode = opcode }
                    continue
                }
                defer { messageCount = 0 }
                return try event(opcode, UnsafeRawBufferPointer(start: message.baseAddress, count: messageCount))
            }
        }
    }

    /// A complete control frame or message as an event: a message's text checked to be UTF-8, a close's payload
    /// checked too.
    private mutating func event(
        _ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer
    ) throws(WebSocketError) -> WebSocketEvent {
        if opcode.isControl { return try controlEvent(opcode, payload) }
        let text = (messageOpcode ?? opcode) == .text
        messageOpcode = nil
        if text { guard WebSocketUTF8Validation.isValid(payload) else { throw .invalidUTF8 } }
        return .message(text: text, payload: payload)
    }

    /// Reads (or goes on gathering) a frame header and checks it; true when it is complete and the state moved
    /// on to its payload, false when `input` ran out first.
    private mutating func readHeader(_ input: inout UnsafeRawBufferPointer) throws(WebSocketError) -> Bool {
        // The common case, a header whole in this read: two loads. Otherwise gathered byte by byte.
        let inPlace = headerCount == 0 && input.count >= 10
        if inPlace {
            header = (
                UInt64(littleEndian: input.loadUnaligned(as: UInt64.self)),
                UInt64(UInt16(littleEndian: input.loadUnaligned(fromByteOffset: 8, as: UInt16.self)))
            )
        } else {
            while headerCount < 2 {
                guard let byte = input.first else { return false }
                appendHeader(byte, &input)
            }
        }
        let first = headerByte(0)
        let second = headerByte(1)
        if first & 0x70 != 0 { throw .reservedBits(first & 0x70) }
        if second & 0x80 != 0 { throw .maskedFrame }
        let lengthCode = Int(second & 0x7F)
        let needed = lengthCode == 127 ? 10 : lengthCode == 126 ? 4 : 2
        if inPlace {
            input = UnsafeRawBufferPointer(rebasing: input[needed...])
        } else {
            while headerCount < needed {
                guard let byte = input.first else { return false }
                appendHeader(byte, &input)
            }
        }
        defer {
            header = (0, 0)
            headerCount = 0
        }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else { throw .unknownOpcode(first & 0x0F) }
        let fin = first & 0x80 != 0
        var length = UInt64(lengthCode)
        if lengthCode == 126 {
            length = UInt64(headerByte(2)) << 8 | UInt64(headerByte(3))
            if length < 126 { throw .nonMinimalLength(length) }
        } else if lengthCode == 127 {
            length = 0
            for i in 2..<10 { length = length << 8 | UInt64(headerByte(i)) }
            if length >> 63 != 0 { throw .lengthTooLarge }
            if length <= 0xFFFF { throw .nonMinimalLength(length) }
        }
        if opcode.isControl {
            if !fin { throw .fragmentedControl }
            if length > 125 { throw .controlTooLong(length) }
        } else if opcode == .continuation {
            if messageOpcode == nil { throw .unexpectedContinuation }
        } else if messageOpcode != nil {
            throw .expectedContinuation
        }
        // Refused from the header: nothing of an oversized message is buffered.
        if !opcode.isControl && length > UInt64(maxMessage - messageCount) {
            throw .messageTooLarge(limit: maxMessage)
        }
        state = .payload(opcode: opcode, fin: fin, remaining: Int(length))
        return true
    }

    /// Grows the message buffer to hold `count` bytes (doubling, capped at `maxMessage`, which the header
    /// check keeps `count` within).
    private mutating func reserve(_ count: Int) {
        guard count > message.count else { return }
        var capacity = message.count
        while capacity < count { capacity = min(capacity * 2, maxMessage) }
        let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
        if messageCount > 0 { grown.baseAddress!.copyMemory(from: message.baseAddress!, byteCount: messageCount) }
        message.deallocate()
        message = grown
    }

    private mutating func appendHeader(_ byte: UInt8, _ input: inout UnsafeRawBufferPointer) {
        if headerCount < 8 {
            header.0 |= UInt64(byte) << UInt64(headerCount * 8)
        } else {
            header.1 |= UInt64(byte) << UInt64((headerCount - 8) * 8)
        }
        headerCount += 1
        input = UnsafeRawBufferPointer(rebasing: input[1...])
    }

    private func headerByte(_ i: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: i < 8 ? header.0 >> UInt64(i * 8) : header.1 >> UInt64((i - 8) * 8))
    }

    /// A complete control frame as an event (a close's payload checked: empty, or a code that may be sent and
    /// a UTF-8 reason).
    private func controlEvent(
        _ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer
    ) throws(WebSocketError) -> WebSocketEvent {
        switch opcode {
        case .ping: return .ping(payload)
        case .pong: return .pong(payload)
        default:
            if payload.isEmpty { return .close(code: nil, reason: payload) }
            guard payload.count >= 2 else { throw .badClose(nil) }
            let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
            guard Self.maySend(closeCode: code) else { throw .badClose(code) }
            let reason = UnsafeRawBufferPointer(rebasing: payload[2...])
            guard WebSocketUTF8Validation.isValid(reason) else { throw .invalidUTF8 }
            return .close(code: code, reason: reason)
        }
    }

    /// Whether an endpoint may put `code` in a close frame (section 7.4): the defined codes but 1004-1006 and
    /// 1015, the IANA-registered 1012-1014, and 3000-4999 for libraries and applications.
    package static func maySend(closeCode code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }
}
