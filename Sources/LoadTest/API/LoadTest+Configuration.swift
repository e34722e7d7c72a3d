import EpollLoop

extension LoadTest {
    /// What a run does: the mode, the target, the load's shape and its pass/fail criteria, with the `loadtest`
    /// command line's defaults and checks.
    ///
    /// A property left nil takes the command line's default (100 connections, 64-byte messages, pipeline 1,
    /// closed loop, 1 s of warm-up, 10 s measured, a 10 s timeout, one loop per core). Every other option of
    /// `loadtest` (`--stages`, `--header`, `--tls`, a mode's own, a ``LoadProtocol``'s) goes into
    /// ``arguments``, spelled as on the command line. The configuration is checked by the command line's own
    /// parser (``validate()``, and at the start of ``LoadTest/run(_:progress:)``), so a value it refuses is
    /// refused here with the same message.
    ///
    /// ```swift
    /// var configuration = LoadTest.Configuration(mode: .http, url: "http://127.0.0.1:\(port)/")
    /// configuration.rate = 2000                       // open loop: 2,000 requests per second in total
    /// configuration.thresholds = ["p99<50ms", "errors==0"]
    /// ```
    public struct Configuration: Sendable {
        /// The kind of load.
        public var mode: Mode
        /// The server's address, a numeric address or a name (`--host`; nil: 127.0.0.1).
        public var host: String?
        /// The server's port (`--port`): every mode but http and ws, which take ``url``.
        public var port: UInt16?
        /// http and ws modes: the URL (`--url`, `http://host:port/path`, `https://`, `ws://`, `wss://`).
        public var url: String?
        /// Concurrent connections (`--connections`; connect mode: parallel churn slots; udp: flows).
        public var connections: Int?
        /// Bytes per message of echo, udp and ws, chunk size of stream (`--size`; default 64).
        public var size: Int?
        /// Requests in flight per connection, closed loop (`--pipeline`; default 1).
        public var pipeline: Int?
        /// Open loop: requests per second in total (`--rate`); nil for closed loop.
        public var rate: Double?
        /// The measured time (`--duration`; default 10 s).
        public var duration: Duration?
        /// Load before measuring starts (`--warmup`; default 1 s).
        public var warmup: Duration?
        /// How long a connect or a reply may take before it counts as an error; zero: no reply timeout
        /// (`--timeout`; default 10 s).
        public var timeout: Duration?
        /// The client's event loops, threads (`--loops`; default one per core). Ignored with ``group``.
        public var loops: Int?
        /// Pass/fail criteria, as `--threshold` takes them (`p99<10ms`, `errors==0`, `rate>=50k`): the report
        /// says which held (``Report/thresholds``).
        public var thresholds: [String] = []
        /// Any other `loadtest` options, as on the command line (`["--stages", "5s:1k,10s:5k"]`,
        /// `["--json", "run.json"]`, `["--send", "PING\\r\\n", "--reply-line"]`).
        public var arguments: [String] = []
        /// The event loops to run the load on, shared with your own code (a server started in the same test,
        /// say) and left running after the run; nil: a group of the run's own, shut down at its end. The
        /// report's client CPU is then the whole group's, whatever else runs on it.
        public var group: EventLoopGroup?

        /// A configuration for `mode` against `port` (on 127.0.0.1 unless ``host`` says).
        public init(mode: Mode, port: UInt16) {
            self.mode = mode
            self.port = port
        }

        /// A configuration for `mode` (http or ws) against `url`.
        public init(mode: Mode, url: String) {
            self.mode = mode
            self.url = url
        }

        /// The `loadtest` command line of this run, after the program's name (a ``LoadProtocol``'s program
        /// takes no mode name): what the run is checked as, and what reproduces it from a shell.
        public var commandLine: [String] {
            var line = mode.isCustom ? [] : [mode.name]
            func add(_ flag: String, _ value: (some CustomStringConvertible)?) {
                if let value { line += [flag, value.description] }
            }
            add("--host", host)
            add("--port", port)
            add("--url", url)
            add("--connections", connections)
            add("--size", size)
            add("--pipeline", pipeline)
            add("--rate", rate)
            add("--duration", duration.map(Self.seconds))
            add("--warmup", warmup.map(Self.seconds))
            add("--timeout", timeout.map(Self.seconds))
            add("--loops", group == nil ? loops : nil)
            for threshold in thresholds { add("--threshold", threshold) }
            return line + arguments
        }

        /// Checks the configuration as the command line would check its ``commandLine``; throws its error.
        public func validate() throws(ConfigurationError) {
            _ = try loadConfig()
        }

        /// The engine's configuration, parsed from ``commandLine``, so the checks and defaults are the command
        /// line's own.
        func loadConfig() throws(ConfigurationError) -> LoadConfig {
            let command: Command
            do {
                command = try CommandLineParser.parse(commandLine, mode: mode.isCustom ? mode.mode : nil)
            } catch {
                throw ConfigurationError(message: error.message)
            }
            guard case .run(var config) = command else {
                throw ConfigurationError(message: "the arguments ask for \(command), not a run")
            }
            config.quiet = true
            if let group { config.loops = group.loops.count }
            return config
        }

        /// `duration` as the command line writes seconds (`0.25s`).
        static func seconds(_ duration: Duration) -> String {
            let (whole, atto) = duration.components
            return "\(Double(whole) + Double(atto) / 1e18)s"
        }
    }
}
