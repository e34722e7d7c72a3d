/// What a ``WebSocketConnection``'s bytes travel over: a TCP connection the transport opens, writes to, reads
/// from and closes, while the connection keeps the protocol (handshake, workloads, close handshake, failures,
/// reconnecting) once for every transport.
///
/// Two transports: ``WebSocketLoopTransport`` for `ws://`, a nonblocking socket on the worker's loop read into
/// the loop's scratch buffer and written with one `send` (a load generator's own cost per message must stay out
/// of the measurement, as echo mode's ``EchoConnection`` does), and ``SocketByteTransport`` for `wss://`,
/// GCDAsyncSocket with its TLS.
///
/// The transport calls its connection back, on the loop: ``WebSocketConnection/transportConnected()`` when the
/// TCP connection is up, ``WebSocketConnection/transportReceived(_:)`` with the server's bytes (valid during
/// the call), ``WebSocketConnection/transportDrained()`` when bytes that waited for the kernel are all sent,
/// and ``WebSocketConnection/transportClosed(_:)`` once per ``connect()``, when the connection is gone. That
/// last one never comes from inside a call into the transport (it is queued on the loop), so the connection may
/// connect again from it without pulling its session from under a read still being parsed.
protocol WebSocketTransport: AnyObject {
    /// The connection it reports to, given once, right after both are made. Not retained: the connection
    /// owns its transport.
    func attach(_ owner: Unmanaged<WebSocketConnection>)
    /// Starts connecting to the server (again, after ``WebSocketConnection/transportClosed(_:)``).
    func connect()
    /// Sends `bytes` after those written before; what the kernel does not take now waits in the transport.
    func write(_ bytes: UnsafeRawBufferPointer)
    /// Whether written bytes are waiting for the kernel: the connection then queues nothing it can hold back
    /// (open-loop messages, pings), so the bytes waiting stay bounded.
    var isBackedUp: Bool { get }
    /// Closes the connection: at once, or once the bytes written so far are sent (`afterWriting`, such as a
    /// close frame). Harmless when it is closed or closing already.
    func close(afterWriting: Bool)
}

extension SocketByteTransport: WebSocketTransport where Owner == WebSocketConnection {}
