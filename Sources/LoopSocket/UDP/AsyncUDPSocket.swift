import EpollLoop
import FoundationEssentials

/// A UDP socket for `async` code, on the same loop-pinned machinery as ``GCDAsyncUdpSocket``.
///
/// When the calling task runs on the socket's own loop (`Task(executorPreference: socket.eventLoop)`), a
/// datagram already received is returned without suspending, and sends and receives complete without any
/// thread hop.
///
/// ```swift
/// let socket = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 9000)
/// try await Task(executorPreference: socket.eventLoop) {
///     for try await datagram in socket.datagrams {
///         try await socket.send(datagram.data, to: datagram.sender)
///     }
/// }.value
/// ```
///
/// One task receives at a time. Received datagrams wait for it up to a bound (`maxBufferedDatagrams`):
/// past it the socket stops reading, so a task that stops receiving leaves the excess to the kernel's
/// socket buffer, which drops it, instead of growing memory.
///
/// Cancellation: a cancelled ``receive()`` throws `CancellationError` and loses no datagram. A cancelled
/// `send` stops waiting and throws `CancellationError`; its datagram stays queued and is still sent.
public final class AsyncUDPSocket: Sendable {
    /// A received datagram and its sender.
    public struct Datagram: Sendable {
        /// The payload.
        public var data: Data
        /// The sender, as a raw `sockaddr` (pass it to ``AsyncUDPSocket/send(_:to:)`` to reply).
        public var sender: Data

        /// A datagram as received (or to compare with one).
        public init(data: Data, sender: Data) {
            self.data = data
            self.sender = sender
        }

        /// The sender's numeric host.
        public var senderHost: String? { GCDAsyncUdpSocket.host(fromAddress: sender) }
        /// The sender's port.
        public var senderPort: UInt16 { GCDAsyncUdpSocket.port(fromAddress: sender) }
    }

    /// The underlying socket, for options and introspection (its events come to this object, not to a
    /// delegate: one set on it is never called).
    public let socket: GCDAsyncUdpSocket
    let handler: AsyncUDPSocketHandler

    private init(socket: GCDAsyncUdpSocket, handler: AsyncUDPSocketHandler) {
        self.socket = socket
        self.handler = handler
    }

    /// Closed with its last reference, like a file handle: a socket dropped unclosed does not keep its descriptor.
    deinit {
        let socket = self.socket
        socket.onLoop { socket.closeWithError(nil) }
    }

    /// The loop this socket lives on: prefer it for the task that uses the socket.
    public var eventLoop: EventLoop { socket.eventLoop }

    /// The port the socket is bound to.
    public var localPort: UInt16 { socket.localPort() }

    /// A socket bound to `host` (a numeric address or a name; nil for every interface) and `port` (0 for one
    /// the system picks), receiving.
    ///
    /// - Parameters:
    ///   - host: a numeric address or a name to bind to; nil for every interface.
    ///   - port: the port; 0 for one the system picks (then read ``localPort``).
    ///   - maxBufferedDatagrams: how many received datagrams may wait for ``receive()`` before the socket
    ///     stops reading (at least 1).
    ///   - loop: the loop to pin the socket to; else `group.next()`, else the default group's.
    ///   - group: the group whose next loop takes the socket when `loop` is nil.
    /// - Throws: ``GCDAsyncUdpSocketError`` (address in use, unknown interface, ...).
    public static func bind(
        host: String?, port: UInt16, maxBufferedDatagrams: Int = 1024, loop: EventLoop? = nil, group: EventLoopGroup? = nil
    ) async throws -> AsyncUDPSocket {
        let handler = AsyncUDPSocketHandler(limit: maxBufferedDatagrams, loop: loop, group: group)
        let socket: GCDAsyncUdpSocket = handler
        let result = AsyncUDPSocket(socket: socket, handler: handler)
        try await result.onLoop {
            try socket.bind(toPort: port, interface: host)
            try socket.beginReceiving()
        }
        return result
    }

    /// Connects the socket to `host` and `port`: sends without an address go there, and only its datagrams
    /// are received (an ICMP error from it, such as a closed port, is thrown by ``receive()``).
    ///
    /// - Throws: ``GCDAsyncUdpSocketError``: the connect's own failure; `badConfigError` at once if another
    ///   `connect` on this socket is still waiting for its outcome (that one completes as usual) or the
    ///   socket is already connected; `closedError` if the socket is closed, before or while it waits.
    public func connect(host: String, port: UInt16) async throws {
        let socket = self.socket, handler = self.handler
        defer { HandOff.received() }
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            let box = UncheckedSendable(continuation)
            let queued = socket.onLoop {
                guard handler.waitForConnect(box.value) else { return }
                do {
                    try socket.connect(toHost: host, onPort: port)
                } catch {
                    handler.connectFailed(error as? GCDAsyncUdpSocketError ?? GCDAsyncUdpSocketError(.otherError, "\(error)"))
                }
            }
            if !queued { continuation.handOff(throwing: GCDAsyncUdpSocketError.loopShutDown) }
        }
    }

    /// Closes the socket and waits until it is closed. A waiting ``receive()`` returns nil; sends still
    /// queued fail with `closedError`.
    public func close() async {
        let socket = self.socket, handler = self.handler
        defer { HandOff.received() }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let box = UncheckedSendable(continuation)
            let queued = socket.onLoop {
                socket.closeWithError(nil)
                handler.finish(nil)  // a socket without a descriptor reports no close
                handler.waitForClose(box.value)
            }
            if !queued { continuation.handOff() }
        }
    }

    /// Runs `body` on the socket's loop (inline when already there), without blocking the calling thread.
    func onLoop(_ body: @escaping @Sendable () throws -> Void) async throws {
        if eventLoop.inEventLoop { return try body() }
        defer { HandOff.received() }
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            let box = UncheckedSendable(continuation)
            let queued = socket.onLoop { box.value.handOff(with: Result { try body() }) }
            if !queued { continuation.handOff(throwing: GCDAsyncUdpSocketError.loopShutDown) }
        }
    }
}
