/// One client connection's WebSocket protocol, apart from its I/O (which the connection that owns it does):
/// the opening handshake, then frames read and answered, then the close handshake.
///
/// Bytes from the server go in through ``next(_:)``, which hands back, one at a time, what the connection must
/// act on: the handshake done, a message, a pong, bytes to send (a pong answering a ping, the close frame
/// answering the server's), or the close. Frames the workload sends are written by the connection itself with
/// ``WebSocketFrame`` and masking keys of its own (``WebSocketMaskKeys``). Nothing here blocks, allocates per
/// message or buffers without a bound (the handshake's head is capped at ``WebSocketHandshake/maxResponseHead``,
/// frames by the ``WebSocketParser``).
package struct WebSocketSession {
    /// Where the session is in its life.
    package enum Phase: Equatable {
        /// The upgrade request is out; the response head is being read.
        case handshaking
        /// Messages flow.
        case open
        /// This side sent a close frame and waits for the server's (reads go on, writes stop).
        case closeSent
        /// Both close frames were exchanged, or the connection failed: the connection is to be closed.
        case closed
    }

    /// What the connection must act on next.
    package enum Step {
        /// The handshake succeeded; the subprotocol the server chose, if any.
        case opened(subprotocol: String?)
        /// A whole message (valid until the next call).
        case message(text: Bool, payload: UnsafeRawBufferPointer)
        /// A pong (valid until the next call).
        case pong(UnsafeRawBufferPointer)
        /// Bytes to write now: a pong answering a ping, or the close frame answering the server's.
        case send([UInt8])
        /// The server's close frame arrived (answered in the ``send(_:)`` just before, unless this side had
        /// sent its own first): its code, nil when it gave none. The connection closes the TCP connection.
        case closed(code: UInt16?, reason: String)
    }

    package private(set) var phase = Phase.handshaking
    private let handshake: WebSocketHandshake
    private var parser: WebSocketParser
    /// The masking keys for the frames the session writes (the connection has its own for its messages).
    private var maskKeys = WebSocketMaskKeys()
    /// The response head so far (handshaking only).
    private var head: [UInt8] = []
    /// A close received and answered: the ``Step/closed(code:reason:)`` still to hand back.
    private var pendingClose: (code: UInt16?, reason: String)?

    package init(handshake: WebSocketHandshake, maxMessage: Int) {
        self.handshake = handshake
        parser = WebSocketParser(maxMessage: maxMessage)
    }

    /// Frees the parser's buffers; the owner calls it once, when done.
    package func deallocate() { parser.deallocate() }

    /// Whether a step is due with no more input (the close that follows the answer to the server's close).
    package var hasPendingStep: Bool { pendingClose != nil }

    /// The next message when it is a whole binary frame at the start of `input` (the echo workload's common
    /// case, ``WebSocketParser/nextWholeBinaryMessage(_:)``); nil, consuming nothing, otherwise: ``next(_:)``
    /// then reads on.
    @inline(__always)
    package mutating func nextWholeBinaryMessage(_ input: inout UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard phase == .open || phase == .closeSent, pendingClose == nil else { return nil }
        return parser.nextWholeBinaryMessage(&input)
    }

    /// The next step from the server's bytes in `input` (consuming what it used); nil when every byte was
    /// consumed without one. A thrown error fails the connection: send ``failure(_:)``'s frame, then close.
    package mutating func next(_ input: inout UnsafeRawBufferPointer) throws(WebSocketError) -> Step? {
        if let close = pendingClose {
            pendingClose = nil
            return .closed(code: close.code, reason: close.reason)
        }
        switch phase {
        case .handshaking:
            return try readHead(&input)
        case .closed:
            // Nothing may follow the server's close frame; whatever does is dropped.
            input = UnsafeRawBufferPointer(start: nil, count: 0)
            return nil
        case .open, .closeSent:
            break
        }
        // A loop, not a recursion, past the pings left unanswered: a read can hold tens of thousands of them.
        while let event = try parser.next(&input) {
            switch event {
            case .message(let text, let payload):
                return .message(text: text, payload: payload)
            case .pong(let payload):
                return .pong(payload)
            case .ping(let payload):
                // Answered at once, with the ping's payload (section 5.5.2); after this side's close, not at all.
                guard phase == .open else { continue }
                return .send(frame(.pong, payload))
            case .close(let code, let reason):
                let wasOpen = phase == .open
                phase = .closed
                let close = (code, String(decoding: reason, as: UTF8.self))
                guard wasOpen else { return .closed(code: close.0, reason: close.1) }
                // Echo the status code back (section 5.5.1); a close without one is answered without one.
                pendingClose = close
                return .send(closeFrame(code: code))
            }
        }
        return nil
    }

    /// Reads the response head; past its end, the bytes are frames (a server may send them at once).
    private mutating func readHead(_ input: inout UnsafeRawBufferPointer) throws(WebSocketError) -> Step? {
        // Only as much as the limit allows is taken: the head must end within it.
        let take = min(input.count, WebSocketHandshake.maxResponseHead - head.count)
        let searchFrom = max(0, head.count - 3)
        head.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[..<take]))
        let end = head.withUnsafeBytes {
            WebSocketHandshake.headEnd(UnsafeRawBufferPointer(rebasing: $0[searchFrom...]))
        }
        guard let end else {
            if head.count >= WebSocketHandshake.maxResponseHead {
                throw .handshakeTooLong(limit: WebSocketHandshake.maxResponseHead)
            }
            input = UnsafeRawBufferPointer(rebasing: input[take...])
            return nil
        }
        let headLength = searchFrom + end
        // What came after the head is left in `input` for the parser.
        input = UnsafeRawBufferPointer(rebasing: input[(take - (head.count - headLength))...])
        let verified = head.withUnsafeBytes { bytes in
            Result { () throws(WebSocketError) in
                try handshake.verify(UnsafeRawBufferPointer(rebasing: bytes[..<headLength]))
            }
        }
        let subprotocol = try verified.get()
        head = []
        phase = .open
        return .opened(subprotocol: subprotocol)
    }

    /// The upgrade request to send first.
    func upgradeRequest(path: String, hostHeader: String, headers: [String]) -> [UInt8] {
        handshake.request(path: path, hostHeader: hostHeader, headers: headers)
    }

    /// A whole client frame of `opcode` with `payload`, masked with the next key.
    mutating func frame(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) -> [UInt8] {
        let key = maskKeys.next()
        return [UInt8](unsafeUninitializedCapacity: WebSocketFrame.clientFrameSize(payloadCount: payload.count)) {
            buffer, count in
            count = WebSocketFrame.writeClientFrame(
                opcode, payload: payload, payloadCount: payload.count, maskKey: key,
                into: UnsafeMutableRawPointer(buffer.baseAddress!))
        }
    }

    /// A close frame with `code` (none when nil); the session then waits for the server's.
    package mutating func close(code: UInt16?) -> [UInt8] {
        if phase == .open { phase = .closeSent }
        return closeFrame(code: code)
    }

    /// The close frame to send when failing the connection for `error` (section 7.1.7), or nil when the
    /// handshake never completed (there is no WebSocket to close). The session is then closed.
    mutating func failure(_ error: WebSocketError) -> [UInt8]? {
        let open = phase == .open
        phase = .closed
        return open ? closeFrame(code: error.closeCode) : nil
    }

    private mutating func closeFrame(code: UInt16?) -> [UInt8] {
        guard let code else { return frame(.close, UnsafeRawBufferPointer(start: nil, count: 0)) }
        return withUnsafeBytes(of: code.bigEndian) { frame(.close, $0) }
    }
}
