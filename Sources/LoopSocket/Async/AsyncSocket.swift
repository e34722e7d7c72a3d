import EpollLoop
import FoundationEssentials

/// A TCP or Unix-domain connection for `async` code, on the same loop-pinned machinery as ``GCDAsyncSocket``.
///
/// When the calling task runs on the socket's own loop (`Task(executorPreference: socket.eventLoop)`, the
/// server pattern below), reads and writes complete without any thread hop, and a read that buffered bytes
/// already satisfy returns without suspending.
///
/// ```swift
/// let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
/// try await withThrowingDiscardingTaskGroup { tasks in
///     for try await connection in listener.connections {
///         tasks.addTask(executorPreference: connection.eventLoop) {
///             try await connection.executeThenClose { connection in
///                 while let chunk = try await connection.read(maxLength: 65536) {
///                     try await connection.write(chunk)
///                 }
///             }
///         }
///     }
/// }
/// ```
///
/// Cancellation: a cancelled read throws `CancellationError` and leaves the socket usable (the bytes of a
/// partly done read go back to the socket's buffer). A cancelled `write` stops waiting for the write queue
/// to drain and throws `CancellationError`; its data stays queued and is still written. A cancelled
/// `connect` closes the socket. ``closeAfterWriting(timeout:)`` and ``close()`` do not react to cancellation.
public final class AsyncSocket: Sendable {
    /// The underlying socket (for options, addresses, and the GCDAsyncSocket API). Its delegate is this
    /// connection's own (an accepted connection's `socket.delegate` reads nil): do not replace it.
    public let socket: GCDAsyncSocket
    let handler: AsyncSocketHandler

    init(socket: GCDAsyncSocket, handler: AsyncSocketHandler) {
        self.socket = socket
        self.handler = handler
        // Its delegate is ours and only resumes continuations, so the socket may pump inside our calls:
        // a write is sent, and a read queued, within `write`/`read` instead of one loop iteration later.
        socket.useAsyncHandler(handler)
    }

    /// Nothing can read or write through this connection any more: it is closed, like a file handle, so a
    /// connection dropped unread (say, one still buffered in a listener's finished `connections`) does not
    /// keep its descriptor open. Queued writes are dropped, as with ``close()``.
    deinit {
        socket.disconnect()
    }

    /// The loop this connection lives on: prefer it for the task that uses the connection.
    public var eventLoop: EventLoop { socket.eventLoop }

    /// Connects to `host` (a name or a numeric address) and `port`.
    ///
    /// - Parameters:
    ///   - host: a name or a numeric address.
    ///   - port: the port to connect to.
    ///   - timeout: for the whole connect (all Happy Eyeballs attempts); nil for none.
    ///   - tls: when set, the connection is returned after its TLS handshake (a client configuration; the
    ///     host name verified is `tls.serverName`, else `host`). The handshake has its own timeout
    ///     (``TLSConfiguration/handshakeTimeout``), apart from `timeout`.
    ///   - loop: the loop to pin the connection to; else `group.next()`, else the default group's.
    ///   - group: the group whose next loop takes the connection when `loop` is nil.
    ///   - options: socket options applied before connecting.
    /// - Throws: ``GCDAsyncSocketError`` (refused, timed out, unknown host, ...), ``TLSError``, or
    ///   `CancellationError`.
    public static func connect(
        host: String, port: UInt16, timeout: Duration? = nil, tls: TLSConfiguration? = nil, loop: EventLoop? = nil,
        group: EventLoopGroup? = nil, options: SocketOptions = SocketOptions()
    ) async throws -> AsyncSocket {
        let connection = try await connect(loop: loop, group: group, options: options) { socket in
            try socket.connect(toHost: host, onPort: port, withTimeout: timeout.map(Self.seconds) ?? -1)
        }
        if let tls { try await connection.startTLS(tls) }
        return connection
    }

    /// Connects to the Unix-domain socket at `path`.
    public static func connect(
        unixPath path: String, timeout: Duration? = nil, loop: EventLoop? = nil, group: EventLoopGroup? = nil
    ) async throws -> AsyncSocket {
        try await connect(loop: loop, group: group, options: SocketOptions()) { socket in
            try socket.connect(to: URL(fileURLWithPath: path), withTimeout: timeout.map(Self.seconds) ?? -1)
        }
    }

    private static func connect(
        loop: EventLoop?, group: EventLoopGroup?, options: SocketOptions, start: (GCDAsyncSocket) throws -> Void
    ) async throws -> AsyncSocket {
        let handler = AsyncSocketHandler()
        let socket = GCDAsyncSocket(delegate: nil, delegateQueue: nil, loop: loop, group: group)
        socket.useAsyncHandler(handler)
        socket.options = options
        socket.autoDisconnectOnClosedReadStream = false  // end of stream is a nil read; writing may go on
        do {
            defer { HandOff.received() }
            try await withCancellationHandler {
                try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                    // Set before connect starts; the loop reads it only after (the start is queued behind this).
                    handler.connectContinuation = continuation
                    do {
                        try start(socket)
                    } catch {
                        handler.connectContinuation = nil
                        continuation.handOff(throwing: error)
                    }
                }
            } onCancel: {
                socket.disconnect()
            }
        }
        if Task.isCancelled {
            socket.disconnect()
            throw CancellationError()
        }
        return AsyncSocket(socket: socket, handler: handler)
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Closes the connection (queued writes are dropped) and waits until it is closed.
    nonisolated(nonsending) public func close() async {
        if (try? closedAlready()) ?? true { return }  // closed (what the close dropped is not this call's to report)
        try? await closeAndWait { socket, _ in socket.closeWithError(nil) }
    }

    /// Closes the connection once everything queued for writing has been written, and waits until it is
    /// closed: the graceful close, for replies still queued when the peer ends its stream or a server shuts
    /// down. Waiting reads end (`read(maxLength:)` returns nil, the other reads throw `closedError`); new
    /// reads and writes are refused.
    ///
    /// Task cancellation does not cut it short, so a connection task that was cancelled (a server shutting
    /// down) still delivers the replies it wrote; `timeout` bounds the wait instead, for a peer that stops
    /// reading: when it passes, the connection is closed and what is still queued is dropped.
    /// - Throws: when queued bytes were not all written: ``GCDAsyncSocketError/Code/writeTimeoutError`` if the
    ///   timeout passed, else the error that ended the connection (a reset by the peer, the loop shutting
    ///   down, ``close()`` called meanwhile).
    @inline(never)  // not into `executeThenClose`, whose frame would carry the close's locals for the connection's life
    nonisolated(nonsending) public func closeAfterWriting(timeout: Duration? = nil) async throws {
        if try closedAlready() { return }
        try await closeAndWait { socket, handler in
            if let timeout { handler.closeAfter(timeout, socket) }
            socket.disconnectAfterWriting()
        }
    }

    /// Whether the connection is known closed already, on the loop (the peer reset it, which ended the task's
    /// reads): then a close has nothing to wait for, and makes neither a continuation nor a closure.
    /// - Throws: the error of the writes the close dropped, as a close waiter gets it.
    private func closedAlready() throws -> Bool {
        guard eventLoop.inEventLoop && handler.disconnected else { return false }
        if let dropped = handler.droppedWrites { throw dropped }
        return true
    }

    /// Starts a close on the loop (unless the socket is closed already) and waits for the disconnect.
    /// - Throws: the error of the writes the close dropped, if it dropped some; `loopShutDown`.
    ///
    /// Nonsending, like the other entry points: run on the caller's executor, with no hop to the generic one
    /// and back (with a task executor preference, each hop takes the task's status-record lock to read it).
    nonisolated(nonsending) private func closeAndWait(
        _ start: @escaping @Sendable (GCDAsyncSocket, AsyncSocketHandler) -> Void
    ) async throws {
        defer { HandOff.received() }
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            let box = UncheckedSendable(continuation)
            let queued = socket.onLoop { [socket, handler] in
                if handler.disconnected { return handler.resumeCloseWaiter(box.value) }
                handler.closeWaiters.append(box.value)
                start(socket, handler)
            }
            if !queued { continuation.handOff(throwing: GCDAsyncSocketError.loopShutDown) }
        }
    }

    /// Shuts down the write side once the queued writes are written: the peer reads end-of-stream, and
    /// this side can still read its reply.
    nonisolated(nonsending) public func closeWrite() async throws {
        try await onLoopThrowing { [socket, handler] () throws -> Void in
            if let failure = handler.failure { throw failure }
            socket.closeWriteStream()
        }
    }

    /// Runs `body` on the loop: inline when already there, else queued and awaited.
    nonisolated(nonsending) func onLoopThrowing<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        if eventLoop.inEventLoop { return try body() }
        defer { HandOff.received() }
        return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<T, any Error>) in
            let queued = socket.onLoop { continuation.handOff(with: Result { try body() }) }
            if !queued { continuation.handOff(throwing: GCDAsyncSocketError.loopShutDown) }
        }
    }
}
