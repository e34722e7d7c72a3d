import EpollLoop

/// What kind of load to generate.
public enum LoadMode: String, Sendable, Codable, CaseIterable {
    /// No arguments: an in-process echo server driven by 1,000 ping-pong connections.
    case demo
    /// Ping-pong of fixed-size messages (closed loop), or at a fixed rate with `--rate` (open loop).
    case echo
    /// Bulk bytes both ways through an echo server.
    case stream
    /// Connection churn: connect, one 64-byte exchange, close.
    case connect
    /// Open connections and hold them.
    case idle
    /// Keep-alive HTTP/1.1 GETs.
    case http
    /// UDP ping-pong against a datagram echo server: `--connections` flows, datagrams of `--size` bytes,
    /// closed loop (`--pipeline` in flight per flow) or open loop (`--rate`); loss, reordering, duplicates and
    /// corruption counted.
    case udp
}

/// Everything a run needs; filled in by ``CommandLineParser``.
public struct LoadConfig: Sendable, Equatable {
    /// The kind of load.
    public var mode: LoadMode
    /// Where to connect (a numeric address or a name).
    public var host = "127.0.0.1"
    /// The port; 0 only in the demo (the in-process server's port is used).
    public var port: UInt16 = 0
    /// Concurrent connections (for `connect`: parallel churn slots).
    public var connections: Int
    /// Bytes per echo message.
    public var size = 64
    /// Requests in flight per connection (closed loop).
    public var pipeline = 1
    /// Total requests per second for an open-loop run; nil for closed loop.
    public var rate: Double?
    /// Seconds measured.
    public var duration: Double = 10
    /// Seconds of load before measuring starts.
    public var warmup: Double = 1
    /// Seconds over which the connections are opened (0: as fast as `maxConnecting` allows).
    public var ramp: Double = 0
    /// Client event loops (threads).
    public var loops: Int
    /// Seconds a connect or a reply may take before it counts as an error; 0 disables reply timeouts.
    public var timeout: Double = 10
    /// Connects in flight at once while opening connections.
    public var maxConnecting = 64
    /// `connect` mode: close with RST (SO_LINGER 0, no TIME_WAIT) rather than FIN.
    public var closeWithReset = true
    /// `http` mode: the request path (with query).
    public var path = "/"
    /// `http` mode: the Host header.
    public var hostHeader = ""
    /// Where to write the JSON result.
    public var jsonPath: String?
    /// Where to write the SVG charts.
    public var svgPath: String?
    /// No progress lines.
    public var quiet = false
    /// A server process whose CPU time (utime + stime from /proc) is measured over the window.
    public var serverPID: Int32?

    // Beyond one machine and into other tools (see LoadConfig+Extended.swift and docs/loadtest.md).

    /// `http` mode: the request method, extra header lines, the body and every path in rotation (``path`` is
    /// the first).
    public var http = HTTPRequestSettings()
    /// When the load starts, wall clock (Unix seconds): processes started apart measure the same window.
    public var startAt: Double?
    /// A name for this process's result (`--id`), recorded in the JSON.
    public var runID: String?
    /// Where to write the HdrHistogram interval log.
    public var hdrLogPath: String?
    /// Where to serve Prometheus text metrics (`GET /metrics`).
    public var metrics: MetricsAddress?
    /// TLS (`--tls`, `https://`; see LoadConfig+TLS.swift).
    public var tls = LoadTLSSettings()

    /// A configuration with the mode's defaults.
    public init(mode: LoadMode) {
        self.mode = mode
        let cores = EventLoopGroup.coreCount
        switch mode {
        case .demo:
            connections = 1000
            loops = max(1, cores - 1)  // one core is the in-process server's
        case .echo, .http, .udp:
            connections = 100
            loops = cores
        case .stream:
            connections = 10
            loops = cores
        case .connect:
            connections = 16
            loops = cores
        case .idle:
            connections = 1000
            loops = cores
        }
    }

    /// Whether the run is open loop (paced at ``rate``).
    public var isOpenLoop: Bool { rate != nil }
}
