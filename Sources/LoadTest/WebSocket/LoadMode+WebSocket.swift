import FoundationEssentials

extension LoadMode {
    /// WebSocket (RFC 6455) over `ws://` or `wss://` (``WebSocketConnection``): echo round trips (closed loop,
    /// `--pipeline`, or open loop), heartbeats on held connections (`--ws-ping`), or receive-only connections
    /// (`--ws-receive`). Several `--url`s of one server are given to the connections in turn.
    package static let ws: LoadMode = {
        var mode = LoadMode(
            name: "ws",
            summary: """
                  ws        WebSocket (RFC 6455): --url ws://host:port/path (wss:// for TLS); echo round trips of
                            --size bytes (--pipeline K, or --rate), heartbeats (--ws-ping T, pong latency) or
                            receive-only connections (--ws-receive, messages/s; latency from a send time)
                """
        ) { WebSocketLoop(worker: $0) }
        mode.speaks = "WebSocket"
        mode.urlSchemes = ("ws", "wss")
        mode.isEchoLike = true
        // ws:// connects to one address, looked up once (wss:// goes through GCDAsyncSocket, which looks up itself).
        mode.resolvesAddress = true
        mode.pipelines = true
        mode.target = { "\($0.host):\($0.port)\($0.path)" }
        // A receive-only connection waits as long as the server is quiet: nothing to time out.
        mode.isSwept = { $0.ws.workload != .receive }
        mode.measuresLatency = { _ in true }
        mode.progress = { p in
            "\(ReportText.fixed(p.sample.requestsPerSecond, 0)) msg/s\(p.target), \(p.sample.connections) connections, "
                + "\(p.sample.errors) errors"
        }
        mode.reportTitle = { r in
            switch r.webSocket?.workload {
            case "heartbeat":
                "WebSocket heartbeats, a ping every \(ReportText.fixed(r.webSocket?.pingIntervalSeconds ?? 0, 3)) s"
            case "receive": "WebSocket, receive only"
            default:
                "WebSocket echo \(r.messageSize.map { "\($0) B" } ?? "mixed sizes"), "
                    + (r.pipeline.map { "pipeline \($0)" } ?? "mixed pipelines")
            }
        }
        mode.reportThroughput = { r in
            let what =
                switch r.webSocket?.workload {
                case "heartbeat": "pongs"
                case "receive": "messages received"
                default: "echoed messages"
                }
            var lines = [
                "  messages/s: \(ReportText.fixed(r.requestsPerSecond, 0)) (\(ReportText.grouped(r.requests)) \(what), "
                    + "\(ReportText.fixed(r.mibPerSecond, 2)) MiB/s received)"
            ]
            if let ws = r.webSocket {
                if ws.untimedMessages > 0 {
                    lines.append(
                        "  untimed: \(ReportText.grouped(ws.untimedMessages)) messages carried no send time "
                            + "(latency is of the \(ReportText.grouped(r.latencyUs.count)) that did)")
                }
                if !ws.serverCloses.isEmpty {
                    let codes = ws.serverCloses.sorted { $0.key < $1.key }.map {
                        "\($0.key) ×\(ReportText.grouped($0.value))"
                    }
                    lines.append("  server closes: " + codes.joined(separator: ", "))
                }
            }
            return lines
        }
        mode.options = [.httpTarget, .webSocket]
        mode.validate = { (config: inout LoadConfig, given: Set<String>) throws(ArgumentError) in
            guard given.contains("--url") || given.contains("--port") else {
                throw ArgumentError("ws mode needs --url ws://host:port/path (or wss://)")
            }
            if config.hostHeader.isEmpty { config.hostHeader = "\(config.host):\(config.port)" }
            switch config.ws.workload {
            case .echo:
                guard config.size <= config.ws.maxMessage else {
                    throw ArgumentError("--size \(config.size) is over --ws-max-message \(config.ws.maxMessage): "
                                        + "the echo would be refused")
                }
            case .heartbeat, .receive:
                let flag = config.ws.workload == .receive ? "--ws-receive" : "--ws-ping"
                if config.isOpenLoop {
                    throw ArgumentError("\(flag) and --rate/--stages do not go together: open loop paces echo messages")
                }
                if given.contains("--pipeline") || given.contains("--size") {
                    throw ArgumentError("\(flag) and --pipeline/--size do not go together: they shape echo messages")
                }
            }
        }
        mode.example = ["--url", "ws://127.0.0.1:8080/", "-c", "100", "--size", "1k", "-d", "30s"]
        return mode
    }()
}

extension ModeOptions {
    /// ws mode's own options: the workload, the subprotocols offered, the message limit, a greeting.
    static let webSocket = ModeOptions(
        flags: ["--ws-ping", "--ws-receive", "--ws-subprotocol", "--ws-max-message", "--ws-send"],
        usage: """
              --ws-ping T         heartbeats: a ping every T per connection (such as 1s, 30s), pong latency
                                  measured from when each ping was due
              --ws-receive        receive only: count the server's messages; time those that start with
                                  their send time (Unix ms, µs or ns in 13, 16 or 19 digits)
              --ws-subprotocol P  offer subprotocol P (Sec-WebSocket-Protocol); repeatable
              --ws-max-message B  the longest message accepted (suffix k = KiB, m = MiB; default 1m); a longer
                                  one ends its connection (error ws_too_large)
              --ws-send TEXT      a text message each connection sends once connected (a subscription)
            """
    ) { flag, config, value throws(ArgumentError) in
        switch flag {
        case "--ws-ping":
            if config.ws.workload == .receive {
                throw ArgumentError("--ws-ping and --ws-receive are separate workloads: give one")
            }
            let text = try value()
            let seconds = try CommandLineParser.seconds(flag, text, allowZero: false)
            guard seconds >= 0.001, seconds <= 3600 else {
                throw ArgumentError(
                    "--ws-ping takes an interval from 1ms to 1h, such as 500ms, 1s or 30s, not '\(text)'")
            }
            config.ws.workload = .heartbeat(interval: seconds)
        case "--ws-receive":
            if case .heartbeat = config.ws.workload {
                throw ArgumentError("--ws-ping and --ws-receive are separate workloads: give one")
            }
            config.ws.workload = .receive
        case "--ws-subprotocol":
            let name = try value()
            guard !name.isEmpty, name.utf8.allSatisfy({ CommandLineParser.isTokenByte($0) }) else {
                throw ArgumentError("--ws-subprotocol takes a token such as chat or mqtt, not '\(name)'")
            }
            config.ws.subprotocols.append(name)
        case "--ws-max-message":
            config.ws.maxMessage = try CommandLineParser.bytes(flag, try value(), range: 1...(1 << 30))
        case "--ws-send":
            config.ws.greeting = try value()
        default:
            return false
        }
        return true
    }
}

/// One loop's share of ws mode: the connections' shared settings and the counts only this mode keeps.
final class WebSocketLoop: ModeLoop {
    unowned let worker: LoopWorker
    /// The paths the connections take in turn (one unless several `--url`s).
    let paths: [String]
    @exclusivity(unchecked) var figures: RunResult.WebSocket

    init(worker: LoopWorker) {
        self.worker = worker
        let config = worker.config
        paths = config.http.paths.isEmpty ? [config.path] : config.http.paths
        figures = RunResult.WebSocket(config.ws)
    }

    func makeConnection(number: Int) -> any LoadConnection { WebSocketConnection(shared: self, number: number) }

    func finish() -> (any ModeFigures)? { figures }

    /// A message with no send time in it arrived at `now`: counted (messages per second, bytes), not timed.
    @inline(__always)
    func recordUntimedMessage(bytes: Int, now: UInt64) {
        worker.completed &+= 1
        worker.receivedBytes &+= UInt64(bytes)
        guard worker.inWindow(now) else { return }
        worker.windowCompleted &+= 1
        worker.windowBytes &+= UInt64(bytes)
        figures.untimedMessages &+= 1
    }

    /// The server sent a close frame with `code` (nil: none).
    func recordServerClose(_ code: UInt16?) {
        guard !worker.stopping else { return }
        figures.serverCloses[code.map(String.init) ?? "none", default: 0] &+= 1
    }
}

extension RunResult.WebSocket: SummableModeFigures {
    func report(into result: inout RunResult, config: LoadConfig, window: Double) {
        result.webSocket = self
    }
}
