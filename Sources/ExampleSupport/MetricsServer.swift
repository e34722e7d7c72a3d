import EpollLoop
import FoundationEssentials
import LoopSocket

/// A tiny HTTP/1.1 responder for `GET /metrics`, on a loop of the server it reports on: what an example
/// server's `--metrics HOST:PORT` starts. The page is rendered per request by `page` on the listener's loop
/// (for the loops' metrics a snapshot each, microseconds), so nothing runs between scrapes.
///
/// ```swift
/// let metrics = try MetricsServer(host: "127.0.0.1", port: 9464, loop: group.loops[0]) { group.prometheusText() }
/// // curl http://127.0.0.1:9464/metrics
/// metrics.close()
/// ```
public final class MetricsServer: GCDAsyncSocketDelegate, @unchecked Sendable {
    // @unchecked: `listener` is only touched by its own loop's callbacks and by `close()`, which the socket
    // hands to that loop; `page` is immutable and `@Sendable`.
    private static let headEnd = Data("\r\n\r\n".utf8)
    private let listener: GCDAsyncSocket
    private let page: @Sendable () -> String

    /// The port it listens on (the one asked for, or the one the kernel picked for port 0).
    public var port: UInt16 { listener.localPort }

    /// Listens on `host`:`port` on `loop`, answering `GET /metrics` with `page()`; throws if it cannot bind.
    public init(host: String, port: UInt16, loop: EventLoop, page: @escaping @Sendable () -> String) throws {
        self.page = page
        listener = GCDAsyncSocket(delegate: nil, delegateQueue: nil, loop: loop)
        listener.delegate = self
        try listener.accept(onInterface: host, port: port)
    }

    /// Stops listening; connections already open finish their current request.
    public func close() {
        listener.disconnect()
    }

    /// Reads each new connection's request head (16 KiB at most, 30 s to send it).
    public func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        newSocket.readData(to: Self.headEnd, withTimeout: 30, maxLength: 16 * 1024, tag: 0)
    }

    /// Answers one request head, then waits for the next on the same connection (keep-alive).
    public func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        let requestLine = String(decoding: data.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
        let (response, keepOpen) = Self.response(to: requestLine, page: page)
        sock.write(Data(response.utf8), withTimeout: 30, tag: 0)
        if keepOpen {
            sock.readData(to: Self.headEnd, withTimeout: 300, maxLength: 16 * 1024, tag: 0)
        } else {
            sock.disconnectAfterWriting()
        }
    }

    /// The whole response to `requestLine` and whether the connection stays open: the page for
    /// `GET /metrics` (query ignored), 405 for another method, 404 for another path, 400 (and close) for a
    /// line that is not `METHOD TARGET VERSION`.
    static func response(to requestLine: String, page: () -> String) -> (String, keepOpen: Bool) {
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3 else {
            return ("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false)
        }
        let (method, target) = (parts[0], parts[1])
        guard method == "GET" else {
            return ("HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\nContent-Length: 0\r\n\r\n", true)
        }
        guard target == "/metrics" || target.hasPrefix("/metrics?") else {
            let body = "metrics are at /metrics\r\n"
            return ("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)", true)
        }
        let body = page()
        return ("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)", true)
    }
}
