/// Everything a run needs; filled in by ``CommandLineParser``.
package struct LoadConfig: Sendable, Equatable {
    /// The kind of load.
    package var mode: LoadMode
    /// Where to connect (a numeric address or a name).
    package var host = "127.0.0.1"
    /// The port; 0 only in the demo (the in-process server's port is used).
    package var port: UInt16 = 0
    /// Concurrent connections (for `connect`: parallel churn slots).
    package var connections: Int
    /// Bytes per echo message.
    package var size = 64
    /// Requests in flight per connection (closed loop).
    package var pipeline = 1
    /// Total requests per second for an open-loop run; nil for closed loop.
    package var rate: Double?
    /// Seconds measured.
    package var duration: Double = 10
    /// Seconds of load before measuring starts.
    package var warmup: Double = 1
    /// Seconds over which the connections are opened (0: as fast as `maxConnecting` allows).
    package var ramp: Double = 0
    /// Client event loops (threads).
    package var loops: Int
    /// Seconds a connect or a reply may take before it counts as an error; 0 disables reply timeouts.
    package var timeout: Double = 10
    /// Connects in flight at once while opening connections.
    package var maxConnecting = 64
    /// `connect` mode: close with RST (SO_LINGER 0, no TIME_WAIT) rather than FIN.
    package var closeWithReset = true
    /// `http` mode: the request path (with query).
    package var path = "/"
    /// `http` mode: the Host header.
    package var hostHeader = ""
    /// Where to write the JSON result.
    package var jsonPath: String?
    /// Where to write the SVG charts.
    package var svgPath: String?
    /// No progress lines.
    package var quiet = false
    /// A server process whose CPU time (utime + stime from /proc) is measured over the window.
    var serverPID: Int32?

    // Beyond one machine and into other tools (see LoadConfig+Extended.swift and docs/loadtest.md).

    /// `http` mode: the request method, extra header lines, the body and every path in rotation (``path`` is
    /// the first).
    package var http = HTTPRequestSettings()
    /// When the load starts, wall clock (Unix seconds): processes started apart measure the same window.
    package var startAt: Double?
    /// A name for this process's result (`--id`), recorded in the JSON.
    package var runID: String?
    /// Where to write the HdrHistogram interval log.
    package var hdrLogPath: String?
    /// The rows over time (`--series`): file, interval, format.
    package var series = SeriesOptions()
    /// Where to serve Prometheus text metrics (`GET /metrics`).
    package var metrics: MetricsAddress?
    /// The server's own metrics page (`--server-metrics`), scraped as the window begins and ends for its
    /// loops' utilisation and lag.
    package var serverMetrics: MetricsAddress?
    /// TLS (`--tls`, `https://`; see LoadConfig+TLS.swift).
    package var tls = LoadTLSSettings()
    /// Open loop that ramps and holds (`--stages`; ``rate`` is then their mean, ``duration`` their sum).
    package var stages: ArrivalStages?
    /// Open loop: how late a request may go out so that it shares a wakeup with others, ns (`--pacing-slack`;
    /// see ``PacerWakeup``). The kernel's default timer slack for a sleeping thread is the same 50 µs.
    package var pacingSlack: UInt64 = 50_000
    /// Pass/fail criteria checked at the end (`--threshold`).
    package var thresholds: [Threshold] = []
    /// `tcp` mode: the requests and how replies end (``TCPSettings``); its `replyMax` also bounds a
    /// ``LoadProtocol``'s replies.
    package var tcp = TCPSettings()
    /// `ws` mode: the workload, subprotocols, message limit and greeting (LoadConfig+WebSocket.swift).
    package var ws = WebSocketSettings()
    /// The options of a ``LoadProtocol``'s own given on the command line (``LoadTestTool``), in order.
    package var protocolOptions: [ProtocolOptionValue] = []
    /// `http` mode: what a response must be to count as a success (`--expect-status`, `--expect-body`).
    package var checks = ResponseChecks()
    /// `http` mode: the longest response head and body read (`--max-head`, `--max-body`).
    package var httpLimits = HTTPResponseLimits()

    /// A configuration with the mode's defaults.
    package init(mode: LoadMode) {
        self.mode = mode
        connections = mode.defaultConnections
        loops = mode.defaultLoops
    }

    /// Whether the run is open loop (paced at ``rate``).
    package var isOpenLoop: Bool { rate != nil }

    /// The warm-up the run has: none where the mode has nothing to warm up (idle connections).
    package var effectiveWarmup: Double { mode.warmsUp ? warmup : 0 }
}
