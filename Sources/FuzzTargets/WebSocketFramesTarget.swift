import LoadTest

/// loadtest's WebSocket frame parser, `WebSocketParser`, fed what a server sends.
///
/// Input: byte 0 picks the message limit, bytes 1-6 three split points; the rest is the server's bytes.
/// Properties: one feed, the same bytes split in three places, one byte at a time, and one feed through the
/// whole-binary-frame fast path (as the session reads) give the same events and the same error; the message
/// buffer never grows past the limit; `next` returning nil has consumed every byte; a text message or close
/// reason is valid UTF-8 (as the standard library judges it) and a close code is one that may be sent.
enum WebSocketFramesTarget {
    /// An event with its payload copied (the parser's is valid only until its next call).
    enum Event: Equatable {
        case message(text: Bool, [UInt8])
        case ping([UInt8])
        case pong([UInt8])
        case close(code: UInt16?, reason: [UInt8])

        init(_ event: WebSocketEvent) {
            switch event {
            case .message(let text, let payload): self = .message(text: text, Array(payload))
            case .ping(let payload): self = .ping(Array(payload))
            case .pong(let payload): self = .pong(Array(payload))
            case .close(let code, let reason): self = .close(code: code, reason: Array(reason))
            }
        }
    }

    struct Outcome: Equatable {
        var events: [Event] = []
        var error: WebSocketError?
    }

    static let limits = [1, 125, 126, 1000, 4096, 4097, 65_535, 1 << 20]

    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        var input = FuzzInput(data)
        let maxMessage = limits[Int(input.byte()) % limits.count]
        let seeds = [input.uint16(), input.uint16(), input.uint16()]
        let bytes = input.rest
        let whole = try feed([bytes], maxMessage: maxMessage, fastPath: false)
        for event in whole.events {
            switch event {
            case .message(true, let payload), .close(_, let payload):
                try check(String(validating: payload, as: UTF8.self) != nil, "invalid UTF-8 passed: \(payload.prefix(40))")
            default:
                break
            }
            if case .close(let code?, _) = event {
                try check(WebSocketParser.maySend(closeCode: code), "a close code \(code) that may not be sent")
            }
        }
        let points = splitPoints(seeds, length: bytes.count)
        let split = try feed(pieces(bytes, at: points), maxMessage: maxMessage, fastPath: false)
        try check(split == whole, "split at \(points): \(split), one feed: \(whole)")
        let fast = try feed([bytes], maxMessage: maxMessage, fastPath: true)
        try check(fast == whole, "with the fast path: \(fast), without: \(whole)")
        let bytewise = try feed((0..<bytes.count).map { bytes.bytes(from: $0).bytes(upTo: 1) },
                                maxMessage: maxMessage, fastPath: true)
        try check(bytewise == whole, "byte at a time: \(bytewise), one feed: \(whole)")
    }

    /// Feeds `pieces` in turn to a new parser until it fails, taking every event.
    static func feed(
        _ pieces: [UnsafeRawBufferPointer], maxMessage: Int, fastPath: Bool
    ) throws(PropertyFailure) -> Outcome {
        var parser = WebSocketParser(maxMessage: maxMessage)
        defer { parser.deallocate() }
        var outcome = Outcome()
        for piece in pieces {
            var rest = piece
            while true {
                if fastPath, let payload = parser.nextWholeBinaryMessage(&rest) {
                    outcome.events.append(.message(text: false, Array(payload)))
                    continue
                }
                let event: WebSocketEvent?
                do {
                    event = try parser.next(&rest)
                } catch {
                    outcome.error = error
                    return outcome
                }
                try check(parser.bufferedCapacity <= maxMessage,
                          "\(parser.bufferedCapacity) bytes buffered, limit \(maxMessage)")
                guard let event else {
                    try check(rest.isEmpty, "no event, and \(rest.count) bytes left unread")
                    break
                }
                outcome.events.append(Event(event))
            }
        }
        return outcome
    }
}
