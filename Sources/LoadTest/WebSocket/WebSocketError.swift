/// Why a WebSocket connection was failed (RFC 6455 section 7.1.7): what the server sent broke the protocol, or
/// the opening handshake did not complete. Each case is counted under one ``ErrorKind`` (``kind``).
package enum WebSocketError: Error, Equatable, CustomStringConvertible {
    /// A frame from the server had its MASK bit set (section 5.1: a client must fail such a connection).
    case maskedFrame
    /// RSV1-3 set with no extension negotiated (the bits, in place).
    case reservedBits(UInt8)
    /// Opcode 3-7 or 11-15.
    case unknownOpcode(UInt8)
    /// A control frame (close, ping, pong) without FIN.
    case fragmentedControl
    /// A control frame with more than 125 bytes of payload.
    case controlTooLong(UInt64)
    /// A 64-bit payload length with its most significant bit set.
    case lengthTooLarge
    /// A length not in its shortest form (126 for fewer than 126 bytes, 127 for fewer than 65536).
    case nonMinimalLength(UInt64)
    /// A continuation frame with no fragmented message under way.
    case unexpectedContinuation
    /// A text or binary frame while a fragmented message waits for its continuation.
    case expectedContinuation
    /// A close frame whose payload is one byte, or whose status code may not be sent (1004-1006, 1015, below
    /// 1000, 1016-2999, 5000 and above).
    case badClose(UInt16?)
    /// A text message (or a close reason) that is not valid UTF-8.
    case invalidUTF8
    /// A message (all its fragments) longer than `--ws-max-message` bytes; found from the frame header, before
    /// its payload is buffered.
    case messageTooLarge(limit: Int)
    /// The opening handshake failed (the reason in words: status, missing or wrong header).
    case handshake(String)
    /// The server's opening handshake response head was longer than the limit without ending.
    case handshakeTooLong(limit: Int)

    /// The error kind the report counts this under.
    var kind: ErrorKind {
        switch self {
        case .maskedFrame: .wsMasked
        case .invalidUTF8: .wsUTF8
        case .messageTooLarge: .wsTooLarge
        case .handshake, .handshakeTooLong: .wsHandshake
        case .reservedBits, .unknownOpcode, .fragmentedControl, .controlTooLong, .lengthTooLarge,
             .nonMinimalLength, .unexpectedContinuation, .expectedContinuation, .badClose:
            .wsMalformed
        }
    }

    /// The status code the client's close frame carries when it fails the connection for this reason
    /// (section 7.4.1): 1007 for bad UTF-8, 1009 for a message too big, 1002 for the rest of the protocol.
    var closeCode: UInt16 {
        switch self {
        case .invalidUTF8: 1007
        case .messageTooLarge: 1009
        default: 1002
        }
    }

    package var description: String {
        switch self {
        case .maskedFrame: "the server sent a masked frame"
        case .reservedBits(let bits): "a frame with reserved bits set (0x\(String(bits, radix: 16))) and no extension"
        case .unknownOpcode(let opcode): "a frame with the unknown opcode \(opcode)"
        case .fragmentedControl: "a fragmented control frame"
        case .controlTooLong(let n): "a control frame of \(n) bytes (at most 125)"
        case .lengthTooLarge: "a 64-bit frame length with its top bit set"
        case .nonMinimalLength(let n): "a frame length of \(n) not in its shortest form"
        case .unexpectedContinuation: "a continuation frame with no fragmented message under way"
        case .expectedContinuation: "a new data frame in the middle of a fragmented message"
        case .badClose(let code?): "a close frame with the status code \(code), which may not be sent"
        case .badClose(nil): "a close frame with a one-byte payload"
        case .invalidUTF8: "a text message (or close reason) that is not valid UTF-8"
        case .messageTooLarge(let limit): "a message over --ws-max-message (\(limit) bytes)"
        case .handshake(let reason): "WebSocket handshake failed: \(reason)"
        case .handshakeTooLong(let limit): "WebSocket handshake failed: a response head over \(limit) bytes"
        }
    }
}
