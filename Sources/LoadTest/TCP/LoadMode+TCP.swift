extension LoadMode {
    /// Any request/response protocol over TCP (or TLS): the requests from `--send`, `--send-file` or
    /// `--send-hex` in rotation, each reply framed by a ``TCPReplyFormat`` and checked by `--expect-body`; closed
    /// loop with `--pipeline`, open loop with `--rate`. Driven by the same connection as a user's
    /// ``LoadProtocol`` (``FramedConnection``), with ``TCPProtocol`` as the protocol.
    package static let tcp: LoadMode = {
        var mode = requestResponse(name: "tcp", summary: """
              tcp       any request/response protocol over TCP or TLS: --send TEXT (or --send-file, --send-hex;
                        several rotate), replies framed by --reply-until, --reply-length,
                        --reply-length-prefix or --reply resp (Redis); --expect-body checks them
            """) { config in TCPProtocol(config.tcp) }
        mode.options = [.tcpRequest, .replyFraming, .replyLimit, .bodyChecks]
        mode.validate = { (config: inout LoadConfig, given: Set<String>) throws(ArgumentError) in
            try requirePort(config, given)
            let tcp = config.tcp
            guard !tcp.requests.isEmpty else {
                throw ArgumentError("tcp mode needs a request: --send TEXT, --send-file FILE or --send-hex HEX")
            }
            guard !tcp.formats.isEmpty else {
                throw ArgumentError("tcp mode needs to know where a reply ends: --reply-until DELIM, "
                                    + "--reply-length N, --reply-length-prefix u8|u16be|u32be|u32le or --reply resp")
            }
            for (what, count) in [("reply framings", tcp.formats.count), ("--expect-body", config.checks.bodies.count)]
            where count > 1 && count != tcp.requests.count {
                throw ArgumentError("tcp mode takes one \(what) for every reply, or one per request in rotation "
                                    + "(\(tcp.requests.count)), not \(count)")
            }
            if tcp.prefixInclusive
                && !tcp.formats.contains(where: { if case .lengthPrefix = $0 { true } else { false } })
            {
                throw ArgumentError("--reply-prefix-inclusive goes with --reply-length-prefix")
            }
            config.tcp.formats = tcp.formats.map { format in
                guard case .lengthPrefix(let prefix, _) = format else { return format }
                return .lengthPrefix(prefix, inclusive: tcp.prefixInclusive)
            }
        }
        mode.example = [
            "--port", "6379", "--send", "PING\\r\\n", "--reply", "resp", "-c", "50", "--pipeline", "8", "-d", "30s",
        ]
        return mode
    }()

    /// A request/response mode called `name` whose connections speak what `makeProtocol` makes of the
    /// configuration (once per loop): tcp mode, and a user's ``LoadProtocol`` run by ``LoadTestTool``.
    static func requestResponse<P: LoadProtocol>(
        name: String, summary: String, _ makeProtocol: @escaping @Sendable (LoadConfig) -> P
    ) -> LoadMode {
        var mode = LoadMode(name: name, summary: summary) { worker in
            let proto = makeProtocol(worker.config)
            let replyMax = worker.config.tcp.replyMax
            return ConnectionFactory(worker) { worker, number in
                FramedConnection(worker: worker, proto: proto, number: number, replyMax: replyMax)
            }
        }
        mode.pipelines = true
        mode.speaks = name
        mode.reportTitle = { r in
            "\(r.mode) requests and replies, \(r.pipeline.map { "pipeline \($0)" } ?? "mixed pipelines")"
        }
        mode.options = [.replyLimit, .bodyChecks]
        return mode
    }
}

/// tcp mode's settings: the requests in rotation and how replies end.
package struct TCPSettings: Sendable, Equatable {
    /// The requests, each sent in turn (request `n` is `requests[n % count]`).
    package var requests: [[UInt8]] = []
    /// Where a reply ends: one for every reply, or one per request in rotation.
    package var formats: [TCPReplyFormat] = []
    /// `--reply-prefix-inclusive`: a length prefix counts its own bytes.
    package var prefixInclusive = false
    /// The most bytes a reply may take before it is framed (`--reply-max`): beyond, a `reply_too_large` error.
    package var replyMax = 1 << 20

    /// No requests, no framing, `--reply-max` 1 MiB.
    package init() {}
}

/// tcp mode as a ``LoadProtocol``: request `n` is the `n % count`th given, framed by its format.
struct TCPProtocol: LoadProtocol {
    /// The requests end to end, request `i` at `ranges[i]`: appending one copies bytes without retaining an
    /// array per request, as an array of arrays would.
    let joined: [UInt8]
    let ranges: [Range<Int>]
    let formats: [TCPReplyFormat]

    init(_ settings: TCPSettings) {
        joined = settings.requests.flatMap { $0 }
        var start = 0
        ranges = settings.requests.map { request in
            defer { start += request.count }
            return start..<start + request.count
        }
        formats = settings.formats
    }

    var name: String { "tcp" }

    func request(sequence: UInt64, connection: Int, into bytes: inout [UInt8]) {
        let range = ranges.count == 1 ? ranges[0] : ranges[Int(sequence % UInt64(ranges.count))]
        joined.withUnsafeBufferPointer { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: $0[range])) }
    }

    func frameReply(_ input: UnsafeRawBufferPointer, sequence: UInt64) -> ReplyFraming {
        formats[formats.count == 1 ? 0 : Int(sequence % UInt64(formats.count))].frame(input)
    }
}

extension ModeOptions {
    /// tcp mode's requests.
    static let tcpRequest = ModeOptions(
        flags: ["--send", "--send-file", "--send-hex"],
        usage: """
              --send TEXT         a request, with escapes \\r \\n \\t \\\\ \\0 \\xHH; repeat: requests in rotation
              --send-file FILE    a request from a file (raw bytes)
              --send-hex HEX      a request in hexadecimal (spaces allowed): --send-hex '10 0c 00 04'
            """
    ) { flag, config, value throws(ArgumentError) in
        switch flag {
        case "--send": config.tcp.requests.append(try CommandLineParser.unescaped(flag, try value()))
        case "--send-file":
            let path = try value()
            do {
                config.tcp.requests.append(try FileIO.read(path))
            } catch {
                throw ArgumentError("--send-file: \(error)")
            }
        case "--send-hex": config.tcp.requests.append(try CommandLineParser.hex(flag, try value()))
        default: return false
        }
        guard !config.tcp.requests.last!.isEmpty else { throw ArgumentError("\(flag) needs at least one byte") }
        return true
    }

    /// How tcp mode finds where a reply ends.
    static let replyFraming = ModeOptions(
        flags: ["--reply-until", "--reply-length", "--reply-length-prefix", "--reply-prefix-inclusive", "--reply"],
        usage: """
              --reply-until DELIM a reply ends after DELIM (escapes as --send): --reply-until 'END\\r\\n'
              --reply-length N    a reply is N bytes
              --reply-length-prefix u8|u16be|u32be|u32le  a reply is a length, then that many bytes
              --reply-prefix-inclusive  the prefix's length counts the prefix itself
              --reply resp        a reply is one Redis RESP2 value (an error value counts as error_reply)
                                  (each of these repeated: one per --send, in rotation)
            """
    ) { flag, config, value throws(ArgumentError) in
        switch flag {
        case "--reply-until":
            config.tcp.formats.append(.until(try CommandLineParser.unescaped(flag, try value())))
            guard case .until(let delimiter) = config.tcp.formats.last!, !delimiter.isEmpty else {
                throw ArgumentError("--reply-until needs at least one byte")
            }
        case "--reply-length":
            config.tcp.formats.append(.length(try CommandLineParser.bytes(flag, try value(), range: 1...(1 << 30))))
        case "--reply-length-prefix":
            let text = try value()
            guard let prefix = TCPReplyFormat.LengthPrefix(rawValue: text) else {
                throw ArgumentError("--reply-length-prefix takes u8, u16be, u32be or u32le, not '\(text)'")
            }
            config.tcp.formats.append(.lengthPrefix(prefix, inclusive: false))
        case "--reply-prefix-inclusive":
            config.tcp.prefixInclusive = true
        case "--reply":
            let text = try value()
            guard text == "resp" else { throw ArgumentError("--reply takes 'resp' (Redis RESP2), not '\(text)'") }
            config.tcp.formats.append(.resp)
        default:
            return false
        }
        return true
    }

    /// The bound on what a connection buffers while a reply is incomplete.
    static let replyLimit = ModeOptions(
        flags: ["--reply-max"],
        usage: """
              --reply-max B       the most bytes a reply may take before it is framed (default 1 MiB);
                                  beyond, a reply_too_large error closes the connection
            """
    ) { flag, config, value throws(ArgumentError) in
        guard flag == "--reply-max" else { return false }
        config.tcp.replyMax = try CommandLineParser.bytes(flag, try value(), range: 1...(1 << 30))
        return true
    }
}
