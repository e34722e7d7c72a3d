/// A request/response protocol over TCP (or TLS) for loadtest to drive: implement it, and ``LoadTestTool``
/// runs it with loadtest's command line, report, JSON, HdrHistogram log, Prometheus metrics, thresholds and
/// merge, closed loop (`--pipeline`) or open loop (`--rate`, `--stages`) with latency from the intended send
/// time.
///
/// A connection optionally exchanges a greeting first (a login, a protocol's CONNECT); it then sends requests
/// numbered 0, 1, 2, … and frames the bytes that come back into replies, in order: each reply answers the
/// oldest request in flight.
///
/// ```swift
/// struct Ping: LoadProtocol {
///     var name: String { "ping" }
///     func request(sequence: UInt64, connection: Int, into bytes: inout [UInt8]) {
///         bytes += Array("PING\r\n".utf8)
///     }
///     func frameReply(_ input: UnsafeRawBufferPointer, sequence: UInt64) -> ReplyFraming {
///         guard let end = input.firstIndex(of: UInt8(ascii: "\n")) else { return .needMore }
///         return input.starts(with: "+PONG".utf8) ? .reply(length: end + 1) : .malformed("not +PONG")
///     }
/// }
/// LoadTestTool.main(Ping())   // `ping --port 6379 --connections 50 --duration 10s --json out.json`
/// ```
public protocol LoadProtocol: Sendable {
    /// The name runs carry in the report and the JSON (`loadtest NAME → host:port`).
    var name: String { get }
    /// What a connection sends as soon as it is connected (and secured), before any request; nil for no
    /// greeting. `connection` numbers the connection (0 up, unique in the run).
    func greeting(connection: Int) -> [UInt8]?
    /// Frames the answer to the greeting in the bytes received so far (the connection counts as open once it
    /// is complete; ``ReplyFraming/errorReply(length:_:)`` and ``ReplyFraming/malformed(_:)`` fail it).
    func frameGreetingReply(_ input: UnsafeRawBufferPointer) -> ReplyFraming
    /// Appends request `sequence` (0 up, per connection) of connection `connection` to `bytes`.
    func request(sequence: UInt64, connection: Int, into bytes: inout [UInt8])
    /// How many bytes at the start of `input` (what has arrived and is not framed yet) make the reply to
    /// request `sequence`, or that more are needed, or that it is an error.
    func frameReply(_ input: UnsafeRawBufferPointer, sequence: UInt64) -> ReplyFraming
}

extension LoadProtocol {
    /// No greeting.
    public func greeting(connection: Int) -> [UInt8]? { nil }
    /// A greeting needs no answer.
    public func frameGreetingReply(_ input: UnsafeRawBufferPointer) -> ReplyFraming { .reply(length: 0) }
}

/// What the bytes received so far make: a reply, not yet one, or an error.
public enum ReplyFraming: Sendable, Equatable {
    /// The first `length` bytes are the reply (a success).
    case reply(length: Int)
    /// The bytes so far are the start of a reply: wait for more (bounded by `--reply-max`).
    case needMore
    /// The first `length` bytes are a reply that reports an error (Redis's `-ERR`, a failure code): counted as
    /// an `error_reply` error, with its latency; the connection goes on.
    case errorReply(length: Int, String)
    /// The bytes cannot be a reply: counted as a `bad_response` error, and the connection is closed.
    case malformed(String)
}
