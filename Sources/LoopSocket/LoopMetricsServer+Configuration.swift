extension LoopMetricsServer {
    /// The limits of a ``LoopMetricsServer``: what any peer may cost it, whatever it sends or withholds.
    ///
    /// Each limit is named after nginx's directive for the same thing, and its default is at least as strict
    /// as nginx's. Every refusal is counted on the page (`loop_metrics_server_*`).
    ///
    /// ```swift
    /// var limits = LoopMetricsServer.Configuration()
    /// limits.maxConnections = 8
    /// let metrics = try LoopMetricsServer(group: group, port: 9464, configuration: limits)
    /// ```
    public struct Configuration: Sendable, Equatable {
        /// Connections open at once (default 64; nginx has no cap of its own beyond `worker_connections`,
        /// 512 by default, for everything the worker serves). A connection over the cap is closed as soon as
        /// it is accepted, before anything is read from it or written to it (the cheapest refusal, since a
        /// flood of connections is what the cap is for); counted as
        /// `loop_metrics_server_connections_refused_total`.
        /// A scraper needs one connection, a few replicas and a person with `curl` a handful: 64 leaves
        /// room for them while keeping the endpoint's descriptors and memory (one request head and one
        /// page per connection at most) a small, fixed share of the process's. At least 1.
        public var maxConnections: Int
        /// Requests answered on one connection before it is closed (default 1,000: nginx's
        /// `keepalive_requests`). The last response says `Connection: close`. At least 1.
        public var maxRequestsPerConnection: Int
        /// Bytes of a request head, request line and headers together (default 8 KiB: nginx's
        /// `large_client_header_buffers` allows 8 KiB per line and 32 KiB in all). A longer head closes the
        /// connection unanswered; counted as `loop_metrics_server_requests_refused_total{reason="too_large"}`.
        /// At least 16.
        public var maxRequestHeadBytes: Int
        /// Time for a request head to arrive whole (default 10 s; nginx's `client_header_timeout`, 60 s):
        /// from the connection's acceptance for its first request, from the first byte of each later one.
        /// Counted as `loop_metrics_server_timeouts_total{phase="head"}`. At least 1 ms.
        public var requestHeadTimeout: Duration
        /// Time a kept-alive connection may wait for the first byte of its next request (default 60 s;
        /// nginx's `keepalive_timeout`, 75 s). Counted as `loop_metrics_server_timeouts_total{phase="idle"}`.
        /// At least 1 ms.
        public var idleTimeout: Duration
        /// Time for a response to be handed to the kernel (default 30 s; nginx's `send_timeout`, 60 s): a
        /// peer that stops reading loses its connection. Counted as
        /// `loop_metrics_server_timeouts_total{phase="send"}`. At least 1 ms.
        public var sendTimeout: Duration
        /// Responses per second over all connections, with a burst of as many (default 100; nginx's
        /// `limit_req` with `rate` and `burst`, off by default). A request over the budget waits for its
        /// turn, oldest first, while its connection reads nothing more; counted as
        /// `loop_metrics_server_requests_delayed_total`. This is what bounds the endpoint's share of its
        /// loop's CPU whatever its peers send. At least 1.
        public var responsesPerSecond: Int
        /// How long a rendered page is served again before the page closure is asked for a new one
        /// (default 100 ms; nginx's `proxy_cache_valid` is the nearest, for a cached upstream response). A
        /// page is never rendered twice in one turn of the loop either, even with an interval of zero.
        /// Prometheus scrapes every few seconds at most, so it never sees a page older than its scrape.
        public var pageReuseInterval: Duration

        /// The limits, each defaulting as documented on its property.
        public init(maxConnections: Int = 64, maxRequestsPerConnection: Int = 1000, maxRequestHeadBytes: Int = 8 * 1024,
                    requestHeadTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(60),
                    sendTimeout: Duration = .seconds(30), responsesPerSecond: Int = 100,
                    pageReuseInterval: Duration = .milliseconds(100)) {
            self.maxConnections = maxConnections
            self.maxRequestsPerConnection = maxRequestsPerConnection
            self.maxRequestHeadBytes = maxRequestHeadBytes
            self.requestHeadTimeout = requestHeadTimeout
            self.idleTimeout = idleTimeout
            self.sendTimeout = sendTimeout
            self.responsesPerSecond = responsesPerSecond
            self.pageReuseInterval = pageReuseInterval
        }

        /// The limits with each value raised to its documented minimum: the server runs on these.
        var clamped: Configuration {
            let shortest = Duration.milliseconds(1)
            return Configuration(
                maxConnections: max(1, maxConnections), maxRequestsPerConnection: max(1, maxRequestsPerConnection),
                maxRequestHeadBytes: max(16, maxRequestHeadBytes), requestHeadTimeout: max(shortest, requestHeadTimeout),
                idleTimeout: max(shortest, idleTimeout), sendTimeout: max(shortest, sendTimeout),
                responsesPerSecond: max(1, responsesPerSecond), pageReuseInterval: max(.zero, pageReuseInterval))
        }
    }
}

extension Duration {
    /// The duration in seconds, as GCDAsyncSocket's timeouts take it.
    var metricsServerSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
