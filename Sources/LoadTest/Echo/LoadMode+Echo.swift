extension LoadMode {
    /// Ping-pong of fixed-size messages (closed loop, `--pipeline` in flight), or at a fixed rate with `--rate`
    /// (open loop); every reply checked byte for byte. Plaintext connections talk to the kernel themselves
    /// (``EchoConnection``); TLS ones go through GCDAsyncSocket (``TLSEchoConnection``, closed loop only).
    package static let echo: LoadMode = {
        var mode = echoLike(
            name: "echo",
            summary: "  echo      closed-loop ping-pong of --size bytes (--pipeline K in flight per connection)")
        mode.example = ["--port", "9000", "-c", "100", "--pipeline", "4", "-d", "30s"]
        return mode
    }()

    /// No arguments: an in-process echo server driven by 1,000 ping-pong connections (reported as echo).
    package static let demo: LoadMode = {
        var mode = echoLike(name: "demo", summary: "")
        mode.resultName = "echo"
        mode.startsServer = true
        mode.defaultConnections = 1000
        mode.supportsTLS = false
        mode.validate = { (config: inout LoadConfig, given: Set<String>) throws(ArgumentError) in
            if given.contains("--port") {
                throw ArgumentError("--port/--url need a mode (for example: loadtest echo --port \\(config.port))")
            }
            if config.startAt != nil {
                throw ArgumentError("--start-at is for runs against a server: give a mode "
                                    + "(for example: loadtest echo --port 9000 --start-at ...)")
            }
        }
        return mode
    }()

    private static func echoLike(name: String, summary: String) -> LoadMode {
        var mode = LoadMode(name: name, summary: summary) { worker in
            ConnectionFactory(worker) { worker, number in
                worker.tls == nil ? EchoConnection(worker: worker, number: number) as any LoadConnection
                    : TLSEchoConnection(worker: worker, number: number)
            }
        }
        mode.isEchoLike = true
        mode.pipelines = true
        mode.resolvesAddress = true
        mode.validate = { (config: inout LoadConfig, given: Set<String>) throws(ArgumentError) in
            try requirePort(config, given)
            if config.tls.enabled && config.isOpenLoop {
                throw ArgumentError(
                    "--rate with --tls is supported in http, tcp, ws, stream and connect modes, not echo")
            }
        }
        return mode
    }
}
