import EpollLoop
import LoopSocket

/// What went wrong, by kind, as the report counts it. The raw values are the JSON keys.
package enum ErrorKind: String, CaseIterable, Sendable, Codable {
    /// `ECONNREFUSED`: nothing listens there (or the backlog overflowed).
    case refused
    /// `ECONNRESET` / `EPIPE`: the peer reset the connection.
    case reset
    /// `EADDRNOTAVAIL`: out of ephemeral ports (or a bad local address).
    case addressNotAvailable = "addr_not_available"
    /// `EMFILE` / `ENFILE`: out of file descriptors.
    case tooManyFiles = "too_many_files"
    /// The connect did not finish within `--timeout`.
    case connectTimeout = "connect_timeout"
    /// A reply did not arrive within `--timeout`, or the kernel timed the connection out.
    case timeout
    /// The peer closed the connection while replies were still expected.
    case closed
    /// An echoed payload did not match what was sent (wrong sequence or bytes): an integrity failure.
    case mismatch
    /// An HTTP response that could not be parsed (a malformed head or chunked body).
    case badResponse = "bad_response"
    /// An HTTP response whose status was not 2xx.
    case httpStatus = "http_status"
    /// A TLS failure: the handshake (verification, protocol, timeout) or a record error.
    case tls
    /// An HTTP response whose body failed a check (`--expect-body`, `--expect-length`).
    case check
    /// A reply that could not be framed within `--reply-max` bytes (tcp mode and ``LoadProtocol``s): the
    /// connection is closed rather than buffer without bound.
    case replyTooLarge = "reply_too_large"
    /// A complete reply that reports an error (Redis's `-ERR`, ``ReplyFraming/errorReply(length:_:)``).
    case errorReply = "error_reply"
    /// WebSocket: the opening handshake failed (not 101, a wrong `Sec-WebSocket-Accept`, an unasked-for
    /// subprotocol or extension).
    case wsHandshake = "ws_handshake"
    /// WebSocket: the server sent a masked frame.
    case wsMasked = "ws_masked"
    /// WebSocket: the server sent a malformed frame (reserved bits, unknown opcode, a fragmented or long control
    /// frame, a bad length, continuation out of place, a bad close payload).
    case wsMalformed = "ws_malformed"
    /// WebSocket: a text message that is not valid UTF-8.
    case wsUTF8 = "ws_utf8"
    /// WebSocket: a message over `--ws-max-message`.
    case wsTooLarge = "ws_too_large"
    /// WebSocket: the server closed with a status code other than 1000 (normal) or 1001 (going away).
    case wsClose = "ws_close"
    /// HTTP: a response head, or the trailer fields after a chunked body, longer than `--max-head`: the
    /// connection is closed rather than buffer without bound.
    case headTooLarge = "head_too_large"
    /// HTTP: a response body longer than `--max-body` (announced by `Content-Length`, or counted as its chunks
    /// arrive): the connection is closed rather than read an endless body.
    case bodyTooLarge = "body_too_large"
    /// A reply still awaited when the run ended, after waiting at least the whole measured duration (but less
    /// than `--timeout`, else it counts as `timeout`): a server that stalls in a run shorter than the timeout.
    case unfinished
    /// Anything else (the first one's text is kept for the report).
    case other

    /// The index of the kind in an ``ErrorCounts``.
    var index: Int { Self.allCases.firstIndex(of: self)! }

    /// Sorts a socket error into a kind.
    package static func classify(_ error: any Error) -> ErrorKind {
        if error is TLSError { return .tls }
        if let error = error as? GCDAsyncSocketError {
            switch error.code {
            case .connectTimeoutError: return .connectTimeout
            case .readTimeoutError, .writeTimeoutError: return .timeout
            case .closedError: return .closed
            default: break
            }
            if let errno = error.errno { return classify(errno: errno) }
            return .other
        }
        if let error = error as? SyscallError { return classify(errno: error.errno) }
        if case .system(let error)? = error as? EventLoopError { return classify(errno: error.errno) }
        return .other
    }

    /// Sorts an `errno` into a kind.
    package static func classify(errno: Errno) -> ErrorKind {
        switch errno {
        case .connectionRefused: return .refused
        case .connectionReset, .brokenPipe, .connectionAborted: return .reset
        case .addressNotAvailable: return .addressNotAvailable
        case .tooManyOpenFiles, .tooManyOpenFilesInSystem: return .tooManyFiles
        case .timedOut: return .timeout
        default: return .other
        }
    }
}

/// Error counts by kind: a fixed array, so counting on the hot path allocates nothing.
package struct ErrorCounts: Sendable, Equatable {
    /// One count per ``ErrorKind``, in `allCases` order.
    package private(set) var counts = [UInt64](repeating: 0, count: ErrorKind.allCases.count)

    /// No errors.
    package init() {}

    /// Counts one error (or `n`) of `kind`.
    package mutating func add(_ kind: ErrorKind, _ n: UInt64 = 1) { counts[kind.index] &+= n }

    /// The count of `kind`.
    package subscript(kind: ErrorKind) -> UInt64 { counts[kind.index] }

    /// All errors.
    package var total: UInt64 { counts.reduce(0, &+) }

    /// Adds every count of `other`.
    package mutating func merge(_ other: ErrorCounts) {
        for i in counts.indices { counts[i] &+= other.counts[i] }
    }

    /// The non-zero counts by JSON key.
    package var byName: [String: UInt64] {
        var result: [String: UInt64] = [:]
        for kind in ErrorKind.allCases where self[kind] > 0 { result[kind.rawValue] = self[kind] }
        return result
    }

    /// Counts from their JSON keys; unknown keys are counted as ``ErrorKind/other``.
    package init(byName: [String: UInt64]) {
        for (name, n) in byName { add(ErrorKind(rawValue: name) ?? .other, n) }
    }
}
