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
    /// Command-line options of its own (`--topic PREFIX`), beside loadtest's: ``LoadTestTool`` takes them
    /// anywhere on the command line, lists them in `--help`, and sets them on the protocol before the run.
    /// None unless declared.
    static var options: [LoadProtocolOption<Self>] { get }
}

extension LoadProtocol {
    /// No greeting.
    public func greeting(connection: Int) -> [UInt8]? { nil }
    /// A greeting needs no answer.
    public func frameGreetingReply(_ input: UnsafeRawBufferPointer) -> ReplyFraming { .reply(length: 0) }
}

extension LoadProtocol {
    /// No options of its own.
    public static var options: [LoadProtocolOption<Self>] { [] }
}

/// A command-line option of a ``LoadProtocol``'s own: a flag that takes a value, its line in `--help`, and
/// what the value sets on the protocol. Its flag must be one loadtest does not take itself (``LoadTestTool``
/// stops at start, naming it, otherwise).
///
/// ```swift
/// extension Ping {
///     static var options: [LoadProtocolOption<Self>] {
///         [LoadProtocolOption("--word", value: "TEXT", help: "what to send (default PING)") { ping, text in
///             ping.word = text
///         }]
///     }
/// }
/// ```
public struct LoadProtocolOption<P: LoadProtocol>: Sendable {
    /// The flag, two dashes first (`--topic`).
    public let flag: String
    /// What `--help` calls its value (`PREFIX`).
    public let value: String
    /// What it does and its default, for `--help` (one line).
    public let help: String
    /// Sets `value` on the protocol, or throws an error whose description says what the value should be.
    let apply: @Sendable (inout P, String) throws -> Void

    /// The option `flag VALUE`, described by `help`; `apply` sets the value given on the protocol, or throws
    /// an error saying what it should be (shown as `flag: error`, and the program exits with status 2).
    public init(
        _ flag: String, value: String, help: String, apply: @escaping @Sendable (inout P, String) throws -> Void
    ) {
        self.flag = flag
        self.value = value
        self.help = help
        self.apply = apply
    }

    /// Its lines in `--help`, aligned as loadtest's own.
    var usage: String {
        let name = "\(flag) \(value)"
        return "  " + name + String(repeating: " ", count: max(2, 20 - name.count)) + help
    }
}

/// A ``LoadProtocolOption`` given on the command line, kept in the configuration so that each loop sets it on
/// its own copy of the protocol.
package struct ProtocolOptionValue: Sendable, Equatable {
    /// The option's flag.
    package var flag: String
    /// The value given.
    package var value: String
}

extension LoadProtocol {
    /// This protocol with the options `given` set, in order. Each value was set once already, on a copy,
    /// when the command line was parsed (``ModeOptions/init(protocolOptions:of:)``), so none fails here.
    func configured(by given: [ProtocolOptionValue]) -> Self {
        var configured = self
        for value in given {
            try? Self.options.first { $0.flag == value.flag }?.apply(&configured, value.value)
        }
        return configured
    }
}

extension ModeOptions {
    /// The options a ``LoadProtocol`` declares, parsed into ``LoadConfig/protocolOptions`` after a trial on a
    /// copy of `proto`, which turns a bad value into a command-line error.
    init<P: LoadProtocol>(protocolOptions options: [LoadProtocolOption<P>], of proto: P) {
        self.init(flags: options.map(\.flag), usage: options.map(\.usage).joined(separator: "\n")) {
            flag, config, value throws(ArgumentError) in
            guard let option = options.first(where: { $0.flag == flag }) else { return false }
            let text = try value()
            var trial = proto
            do {
                try option.apply(&trial, text)
            } catch {
                throw ArgumentError("\(flag): \(error)")
            }
            config.protocolOptions.append(ProtocolOptionValue(flag: flag, value: text))
            return true
        }
    }
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
