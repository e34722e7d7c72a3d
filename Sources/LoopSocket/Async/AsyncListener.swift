import EpollLoop
import FoundationEssentials

/// A listening socket for `async` code: accepted connections arrive as an `AsyncSequence`, spread over the
/// group's loops.
///
/// ```swift
/// let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
/// for try await connection in listener.connections { ... }
/// ```
public final class AsyncListener: Sendable {
    /// The underlying listening socket.
    public let socket: GCDAsyncSocket
    /// Accepted connections, until ``close()``. One consumer; when its iteration is cancelled the listener
    /// closes (a connection accepted but never taken from the sequence is closed too).
    public let connections: Connections
    private let handler: AsyncSocketHandler

    /// Listens on `host` (nil: every interface, IPv4 and IPv6) and `port` (0: any; see ``localPort``).
    ///
    /// - Parameters:
    ///   - host: the interface address to listen on (a numeric address or a name); nil for every interface.
    ///   - port: the port; 0 for one the system picks (then read ``localPort``).
    ///   - tls: a server configuration: every accepted connection runs its TLS handshake on its own loop
    ///     and arrives in ``connections`` only once secured, so a slow or stalled handshake never holds up
    ///     accepting or the others (it ends at ``TLSConfiguration/handshakeTimeout``).
    ///   - acceptFailed: hears of connections that could not be accepted (at the descriptor limit the loop
    ///     sheds them) and, with `tls`, of handshakes that failed (a ``TLSError``, or the error that closed
    ///     the connection); on the listener's loop for the first, the connection's loop for the second.
    ///   - group: the loops accepted connections are spread over; else the default group's.
    ///   - options: socket options for the listener and every accepted connection.
    public convenience init(
        host: String?, port: UInt16, tls: TLSConfiguration? = nil, group: EventLoopGroup? = nil,
        options: SocketOptions = SocketOptions(), acceptFailed: (@Sendable (any Error) -> Void)? = nil
    ) throws {
        try self.init(group: group, options: options, tls: tls, acceptFailed: acceptFailed) {
            try $0.accept(onInterface: host, port: port)
        }
    }

    /// Listens on a Unix-domain socket at `path`.
    public convenience init(unixPath path: String, group: EventLoopGroup? = nil, options: SocketOptions = SocketOptions()) throws {
        try self.init(group: group, options: options, tls: nil) { try $0.accept(on: URL(fileURLWithPath: path)) }
    }

    private init(
        group: EventLoopGroup?, options: SocketOptions, tls: TLSConfiguration?,
        acceptFailed: (@Sendable (any Error) -> Void)? = nil, start: (GCDAsyncSocket) throws -> Void
    ) throws {
        if let tls, tls.role != .server {
            throw TLSError(.badConfiguration, "A listener needs a server TLS configuration (TLSConfiguration.server)")
        }
        let handler = AsyncSocketHandler()
        handler.acceptFailed = acceptFailed
        handler.serverTLS = tls
        let socket = GCDAsyncSocket(delegate: nil, delegateQueue: nil, group: group)
        socket.useAsyncHandler(handler)
        // The consuming task was cancelled: stop listening, so the kernel does not go on accepting
        // connections nobody will serve.
        let queue = AcceptQueue { socket.disconnect() }
        handler.accepted = queue
        socket.options = options
        socket.autoDisconnectOnClosedReadStream = false  // inherited: end of stream is a nil read
        try start(socket)
        self.socket = socket
        self.handler = handler
        self.connections = Connections(queue: queue)
    }

    /// The port listened on.
    public var localPort: UInt16 { socket.localPort }

    /// Stops listening; ``connections`` finishes.
    public func close() {
        socket.disconnect()
    }
}
