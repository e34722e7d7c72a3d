import LoadTest

/// loadtest's WebSocket client session, `WebSocketSession.next(_:)`: the server's handshake response (read to
/// its CRLF CRLF within `WebSocketHandshake.maxResponseHead`, then checked by `WebSocketHandshake.verify`),
/// then its frames, answered (pings, the close).
///
/// Input: byte 0 picks the message limit and (its top bit) whether the client sends its close as soon as the
/// session opens, bytes 1-6 three split points; the rest is the server's bytes (the
/// seeds carry the `Sec-WebSocket-Accept` for the fixed key, which the fuzzer cannot compute). Properties: one
/// feed, three splits and one byte at a time give the same steps and the same error, driven as the connection
/// drives the session (the whole-binary fast path first, steps left pending taken with no input); a session
/// that opened had the right accept value in the head; a head that never ends within the limit fails.
package enum WebSocketHandshakeTarget {
    package static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    static let subprotocols = ["chat", "superchat"]

    /// A step with its bytes copied, and a frame to send read back unmasked (its masking key is random).
    enum Step: Equatable {
        case opened(subprotocol: String?)
        case message(text: Bool, [UInt8])
        case pong([UInt8])
        case send(first: UInt8, payload: [UInt8])
        case closed(code: UInt16?, reason: String)
        /// The client sent its close frame (the input asked for it once the session opened).
        case sentClose
    }

    struct Outcome: Equatable {
        var steps: [Step] = []
        var error: WebSocketError?
    }

    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        var input = FuzzInput(data)
        let selector = Int(input.byte())
        let maxMessage = WebSocketFramesTarget.limits[selector % WebSocketFramesTarget.limits.count]
        let closeOnOpen = selector & 0x80 != 0
        let seeds = [input.uint16(), input.uint16(), input.uint16()]
        let bytes = input.rest
        let whole = try feed([bytes], maxMessage: maxMessage, closeOnOpen: closeOnOpen)
        if whole.steps.first.map({ if case .opened = $0 { true } else { false } }) == true {
            let accept = Array(WebSocketHandshake.accept(for: key).utf8)
            try check(MetricsRequestTarget.firstRange(of: accept, in: bytes) != nil, "opened without the accept value")
        }
        if whole.steps.isEmpty && whole.error == nil {
            try check(bytes.count < WebSocketHandshake.maxResponseHead
                        || MetricsRequestTarget.firstRange(of: MetricsRequestTarget.headEnd, in: bytes) != nil,
                      "\(bytes.count) bytes without a head end, and no failure")
        }
        let points = splitPoints(seeds, length: bytes.count)
        let split = try feed(pieces(bytes, at: points), maxMessage: maxMessage, closeOnOpen: closeOnOpen)
        try check(split == whole, "split at \(points): \(split), one feed: \(whole)")
        let bytewise = try feed((0..<bytes.count).map { bytes.bytes(from: $0).bytes(upTo: 1) }, maxMessage: maxMessage,
                                closeOnOpen: closeOnOpen)
        try check(bytewise == whole, "byte at a time: \(bytewise), one feed: \(whole)")
    }

    static func feed(
        _ pieces: [UnsafeRawBufferPointer], maxMessage: Int, closeOnOpen: Bool
    ) throws(PropertyFailure) -> Outcome {
        var session = WebSocketSession(handshake: WebSocketHandshake(subprotocols: subprotocols, key: key),
                                       maxMessage: maxMessage)
        defer { session.deallocate() }
        var outcome = Outcome()
        for piece in pieces + [UnsafeRawBufferPointer(start: nil, count: 0)] {
            var rest = piece
            while true {
                if let payload = session.nextWholeBinaryMessage(&rest) {
                    outcome.steps.append(.message(text: false, Array(payload)))
                    continue
                }
                let step: WebSocketSession.Step?
                do {
                    step = try session.next(&rest)
                } catch {
                    outcome.error = error
                    return outcome
                }
                guard let step else {
                    try check(rest.isEmpty, "no step, and \(rest.count) bytes left unread")
                    if session.hasPendingStep { continue }
                    break
                }
                outcome.steps.append(try Step(step))
                if closeOnOpen, case .opened = step {
                    let frame = session.close(code: 1000)
                    try check(frame.count == 8 && frame[0] == 0x88, "the client's close frame: \(frame)")
                    outcome.steps.append(.sentClose)
                }
            }
        }
        return outcome
    }
}

extension WebSocketHandshakeTarget.Step {
    init(_ step: WebSocketSession.Step) throws(PropertyFailure) {
        switch step {
        case .opened(let subprotocol): self = .opened(subprotocol: subprotocol)
        case .message(let text, let payload): self = .message(text: text, Array(payload))
        case .pong(let payload): self = .pong(Array(payload))
        case .closed(let code, let reason): self = .closed(code: code, reason: reason)
        case .send(let frame):
            // A client frame: masked, its length in the shortest form; unmasked here.
            try check(frame.count >= 6 && frame[1] & 0x80 != 0 && frame[1] & 0x7F < 126, "a frame to send: \(frame)")
            let count = Int(frame[1] & 0x7F)
            try check(frame.count == 6 + count, "a frame to send of \(frame.count) bytes for \(count) of payload")
            let key = frame[2..<6]
            let payload = frame[6...].enumerated().map { $0.element ^ key[key.startIndex + $0.offset % 4] }
            self = .send(first: frame[0], payload: payload)
        }
    }
}
