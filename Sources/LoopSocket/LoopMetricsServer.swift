import EpollLoop
import FoundationEssentials

/// A small HTTP/1.1 endpoint for an `EventLoopGroup`'s metrics: `GET /metrics` answers with every loop's
/// figures in Prometheus' text format (`EventLoopGroup.prometheusText()`), for a server that has no HTTP
/// endpoint of its own. One line starts it:
///
/// ```swift
/// let group = try EventLoopGroup()
/// try group.startLagProbe()                                     // optional: lag sampled every 10 ms
/// let metrics = try LoopMetricsServer(group: group, port: 9464)
/// // curl http://127.0.0.1:9464/metrics
/// metrics.close()
/// try group.shutdownGracefully()
/// ```
///
/// By default it runs on an event loop and thread of its own, so that a scrape, or a peer that abuses the
/// endpoint, never delays the group's traffic; given a `loop`, it shares that loop instead. Whatever its
/// peers do, what it may cost is bounded by its ``Configuration``: connections (64; more are closed at once),
/// requests per connection, the size and arrival time of a request head, idle time, and responses per
/// second (100). A page is rendered at most once per loop turn and served again for 100 ms
/// (``Configuration/pageReuseInterval``), and a connection's next request is read only once the answer to
/// the last has been handed to the kernel. What it refused is appended to the page
/// (`loop_metrics_server_*`).
///
/// `GET` and `HEAD` of `/metrics` (with or without a query) get the page, another path 404, another method
/// 405, a head that is not HTTP/1.x 400 (and the connection is closed). Connections are kept alive between
/// requests (not after one that says `Connection: close`, or HTTP/1.0 without `keep-alive`).
/// ``init(host:port:loop:configuration:page:)`` serves a page of your own instead: the group's text with your
/// metrics appended, say. A server that has an HTTP endpoint already appends `group.prometheusText()` to its
/// own page instead.
public final class LoopMetricsServer: Sendable {
    private let listener: GCDAsyncSocket
    /// The listener's delegate, which it holds weakly: kept alive here.
    private let responder: MetricsResponder
    /// The loop started for the server when it was given none, shut down by ``close()``.
    private let ownLoop: EventLoopGroup?

    /// The limits the server runs with (each raised to its documented minimum).
    public let configuration: Configuration

    /// The port it listens on: the one asked for, or the one the kernel picked for port 0.
    public var port: UInt16 { listener.localPort }

    /// Serves `group`'s metrics at `http://host:port/metrics` until ``close()``.
    ///
    /// - Parameters:
    ///   - group: the loops to report on.
    ///   - host: the interface address to listen on: the loopback address by default, so that nothing is
    ///     exposed to the network unless asked; `nil` listens on every interface.
    ///   - port: the port (0: a free one, then read ``port``).
    ///   - loop: the loop to serve on; `nil`, the default, starts one of its own (a thread named
    ///     `metrics-0`), so that scrapes never delay the group's traffic.
    ///   - configuration: the limits on what peers may cost it.
    /// - Throws: the listener's ``GCDAsyncSocketError`` if it cannot listen there (the port in use, an
    ///   address that is not the machine's), or the `EventLoopError` of a loop that cannot start.
    public convenience init(group: EventLoopGroup, host: String? = "127.0.0.1", port: UInt16, loop: EventLoop? = nil,
                            configuration: Configuration = Configuration()) throws {
        try self.init(host: host, port: port, loop: loop, configuration: configuration) { group.prometheusText() }
    }

    /// Serves what `page` returns at `http://host:port/metrics` until ``close()``.
    ///
    /// ```swift
    /// let metrics = try LoopMetricsServer(port: 9464) {
    ///     group.prometheusText() + myCounters.prometheusText()
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - host: the interface address to listen on (default the loopback address; `nil`: every interface).
    ///   - port: the port (0: a free one, then read ``port``).
    ///   - loop: the loop that listens, and on which `page` is called; `nil`, the default, starts one of its
    ///     own (a thread named `metrics-0`).
    ///   - configuration: the limits on what peers may cost it.
    ///   - page: the response body: Prometheus text, served as `text/plain; version=0.0.4`. Called on the
    ///     server's loop, at most once per ``Configuration/pageReuseInterval`` and once per loop turn.
    /// - Throws: the listener's ``GCDAsyncSocketError`` if it cannot listen there, or the `EventLoopError`
    ///   of a loop that cannot start.
    public init(host: String? = "127.0.0.1", port: UInt16, loop: EventLoop? = nil,
                configuration: Configuration = Configuration(), page: @escaping @Sendable () -> String) throws {
        let ownLoop = loop == nil ? try EventLoopGroup(numberOfLoops: 1, name: "metrics") : nil
        let serving = loop ?? ownLoop!.loops[0]
        let limits = configuration.clamped
        let responder = MetricsResponder(loop: serving, configuration: limits, page: page)
        let listener = GCDAsyncSocket(delegate: responder, delegateQueue: nil, loop: serving)
        do {
            try listener.accept(onInterface: host, port: port)
        } catch {
            try? ownLoop?.shutdownGracefully()
            throw error
        }
        self.listener = listener
        self.responder = responder
        self.ownLoop = ownLoop
        self.configuration = limits
    }

    deinit {
        close()
    }

    /// What the server refused and why, as the page shows it; any thread.
    var counters: MetricsServerCounters { responder.counters }

    /// Stops listening and closes the connections open (at once; also when the server is released), then
    /// stops the server's own loop if it has one. Call it from outside that loop. On a shared loop, close it
    /// before shutting the group down.
    public func close() {
        listener.disconnect()
        responder.shutDown()
        guard let ownLoop else { return }
        if ownLoop.currentLoop != nil {
            ownLoop.loops[0].initiateShutdown()
        } else {
            try? ownLoop.shutdownGracefully()
        }
    }
}
