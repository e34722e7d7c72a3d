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
/// It listens on the group's first loop and renders the page there per request (a snapshot of each loop,
/// microseconds), so nothing runs between scrapes. ``init(host:port:loop:page:)`` serves a page of your own
/// instead: the group's text with your metrics appended, say. Connections are kept alive between requests (not
/// after one that says `Connection: close`, or HTTP/1.0 without `keep-alive`); a request head must arrive
/// within 30 s and fit in 16 KiB, and a connection idle for 5 minutes is closed. Another method gets 405,
/// another path 404, a line that is not `METHOD TARGET VERSION` 400 (and the connection is closed). A server that has an HTTP endpoint already appends `group.prometheusText()` to its own page
/// instead.
public final class LoopMetricsServer: Sendable {
    private let listener: GCDAsyncSocket
    /// The listener's delegate, which it holds weakly: kept alive here.
    private let responder: MetricsResponder

    /// The port it listens on: the one asked for, or the one the kernel picked for port 0.
    public var port: UInt16 { listener.localPort }

    /// Serves `group`'s metrics at `http://host:port/metrics` until ``close()``.
    ///
    /// - Parameters:
    ///   - group: the loops to report on; the server listens on its first loop.
    ///   - host: the interface address to listen on: the loopback address by default, so that nothing is
    ///     exposed to the network unless asked; `nil` listens on every interface.
    ///   - port: the port (0: a free one, then read ``port``).
    /// - Throws: the listener's ``GCDAsyncSocketError`` if it cannot listen there (the port in use, an
    ///   address that is not the machine's).
    public convenience init(group: EventLoopGroup, host: String? = "127.0.0.1", port: UInt16) throws {
        try self.init(host: host, port: port, loop: group.loops[0]) { group.prometheusText() }
    }

    /// Serves what `page` returns at `http://host:port/metrics` until ``close()``, listening on `loop`.
    ///
    /// ```swift
    /// let metrics = try LoopMetricsServer(port: 9464, loop: group.loops[0]) {
    ///     group.prometheusText() + myCounters.prometheusText()
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - host: the interface address to listen on (default the loopback address; `nil`: every interface).
    ///   - port: the port (0: a free one, then read ``port``).
    ///   - loop: the loop that listens, and on which `page` is called for each request.
    ///   - page: the response body: Prometheus text, served as `text/plain; version=0.0.4`.
    /// - Throws: the listener's ``GCDAsyncSocketError`` if it cannot listen there.
    public init(host: String? = "127.0.0.1", port: UInt16, loop: EventLoop,
                page: @escaping @Sendable () -> String) throws {
        responder = MetricsResponder(page: page)
        listener = GCDAsyncSocket(delegate: responder, delegateQueue: nil, loop: loop)
        try listener.accept(onInterface: host, port: port)
    }

    deinit {
        listener.disconnect()
    }

    /// Stops listening (at once; also when the server is released). Connections already open finish the
    /// request they are reading. Close it before shutting the group down.
    public func close() {
        listener.disconnect()
    }
}

/// The metrics server's HTTP side: reads request heads and answers them, on the listener's loop.
final class MetricsResponder: GCDAsyncSocketDelegate, Sendable {
    private static let headEnd = Data("\r\n\r\n".utf8)
    private let page: @Sendable () -> String

    init(page: @escaping @Sendable () -> String) {
        self.page = page
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        newSocket.readData(to: Self.headEnd, withTimeout: 30, maxLength: 16 * 1024, tag: 0)
    }

    /// Answers one request head, then waits for the next on the same connection (keep-alive), unless the
    /// request asked for the end of the connection.
    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        let head = String(decoding: data, as: UTF8.self)
        let (response, keepOpen) = Self.response(to: head, page: page)
        sock.write(Data(response.utf8), withTimeout: 30, tag: 0)
        if keepOpen {
            sock.readData(to: Self.headEnd, withTimeout: 300, maxLength: 16 * 1024, tag: 0)
        } else {
            sock.disconnectAfterWriting()
        }
    }

    /// The whole response to the request `head` and whether the connection stays open: the page for
    /// `GET /metrics` (query ignored), 405 for another method, 404 for another path, 400 (and close) for a
    /// first line that is not `METHOD TARGET VERSION`. The connection closes after the response, which then
    /// says `Connection: close`, when the request asks for it (RFC 9112 9.6: a `close` token in `Connection`,
    /// or HTTP/1.0 without `keep-alive`), as a scraper or script that reads to the end of the stream expects.
    static func response(to head: String, page: () -> String) -> (String, keepOpen: Bool) {
        let lines = head.split(omittingEmptySubsequences: true) { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }
        let parts = (lines.first ?? "").split(separator: " ")
        guard parts.count == 3 else {
            return ("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false)
        }
        let (method, target) = (parts[0], parts[1])
        let keepOpen = wantsKeepAlive(version: parts[2], headerLines: lines.dropFirst())
        let connection = keepOpen ? "" : "Connection: close\r\n"
        guard method == "GET" else {
            return ("HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\n\(connection)Content-Length: 0\r\n\r\n", keepOpen)
        }
        guard target == "/metrics" || target.hasPrefix("/metrics?") else {
            let body = "metrics are at /metrics\r\n"
            return ("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n\(connection)"
                        + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)", keepOpen)
        }
        let body = page()
        return ("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\(connection)"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)", keepOpen)
    }

    /// HTTP/1.1 persists unless a `Connection` header has the `close` token; HTTP/1.0 only with `keep-alive`.
    private static func wantsKeepAlive(version: Substring, headerLines: ArraySlice<Substring>) -> Bool {
        var tokens: [Substring] = []
        for line in headerLines {
            guard let colon = line.firstIndex(of: ":"),
                  line[..<colon].lowercased() == "connection" else { continue }
            tokens += line[line.index(after: colon)...].split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces).lowercased()[...] }
        }
        if tokens.contains("close") { return false }
        return version == "HTTP/1.1" || tokens.contains("keep-alive")
    }
}
