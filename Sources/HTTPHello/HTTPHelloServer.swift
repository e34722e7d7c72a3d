import Dispatch
import FoundationEssentials
import LoopSocket

/// http-hello's listener delegate: every accepted connection gets its own ``HTTPHelloConnection``.
///
/// ```swift
/// let server = HTTPHelloServer()
/// let listener = GCDAsyncSocket(delegate: server, delegateQueue: nil, group: group)
/// try listener.accept(onInterface: "127.0.0.1", port: 8080)
/// ```
public final class HTTPHelloServer: GCDAsyncSocketDelegate, Sendable {
    /// Limits and timeouts.
    public struct Configuration: Sendable {
        /// Seconds a connection may wait for (the rest of) a request before it is closed.
        public var idleTimeout: TimeInterval = 30
        /// The longest request head (request line and header fields, and any empty lines before them); longer
        /// ones get 431.
        public var maxHeadLength = 8192
        /// After a refusal, how long the rest of what the client sends is read and dropped, so that the
        /// kernel does not answer it with a reset that could destroy the refusal before it is read.
        public var lingerTimeout: TimeInterval = 2

        /// Serve HTTPS: each connection starts TLS with this server configuration before its first read.
        public var tls: TLSConfiguration?

        /// The defaults (plaintext).
        public init() {}
    }

    public let configuration: Configuration
    /// The response bytes, built once and shared by every connection.
    let responses = HTTPResponses()
    /// Reports accept failures (the descriptor limit, mostly); called on the listener's loop.
    let acceptFailed: @Sendable (any Error) -> Void

    /// A server with `configuration`; `acceptFailed` hears of connections that could not be accepted.
    public init(configuration: Configuration = Configuration(), acceptFailed: @escaping @Sendable (any Error) -> Void = { _ in }) {
        self.configuration = configuration
        self.acceptFailed = acceptFailed
    }

    /// Gives the new connection its own delegate, which keeps itself alive until the socket disconnects
    /// (the connection does not hold the socket).
    public func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        let connection = HTTPHelloConnection(server: self)
        newSocket.delegate = connection
        if let tls = configuration.tls { newSocket.startTLS(tls) }
        newSocket.readData(withTimeout: configuration.idleTimeout, tag: 0)
    }

    /// Passes the failure on (an example server logs it).
    public func socket(_ sock: GCDAsyncSocket, didFailToAcceptWithError error: any Error) {
        acceptFailed(error)
    }
}
