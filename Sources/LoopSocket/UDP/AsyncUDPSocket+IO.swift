import EpollLoop
import FoundationEssentials

/// Receiving and sending.
extension AsyncUDPSocket {
    /// The next datagram; nil once the socket is closed (after the datagrams already received).
    ///
    /// On the socket's loop, a datagram already received is returned without suspending.
    /// - Throws: an error received in the datagram's place (`ECONNREFUSED` on a connected socket whose peer
    ///   has no socket on its port, a datagram over the receive size); the socket works on after it.
    ///   `CancellationError`; `badConfigError` if another task is already receiving.
    nonisolated(nonsending) public func receive() async throws -> Datagram? {
        try Task.checkCancellation()
        let socket = self.socket, handler = self.handler
        if eventLoop.inEventLoop, let item = handler.takeBuffered() {
            switch item {
            case .datagram(let datagram): return datagram
            case .failure(let error): throw error
            }
        }
        let cancellation = PendingCancellation<UInt64>()
        defer { HandOff.received() }
        return try await withCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Datagram?, any Error>) in
                let box = UncheckedSendable(continuation)
                let queued = socket.onLoop { handler.waitForDatagram(box.value, cancellation) }
                if !queued { continuation.handOff(throwing: GCDAsyncUdpSocketError.loopShutDown) }
            }
        } onCancel: {
            socket.onLoop {
                cancellation.cancelled = true
                if let id = cancellation.id { handler.cancelReceive(id) }
            }
        }
    }

    /// Sends `data` to `address` (a raw `sockaddr`, as ``Datagram/sender`` holds) and returns once the
    /// kernel has taken it.
    /// - Throws: ``GCDAsyncUdpSocketError``: `badParamError` for an invalid address or a datagram over
    ///   `maxSendBufferSize()`, `otherError` with `ENOBUFS` past `maxQueuedSendBytes()`, the send's own
    ///   error, `closedError`; or `CancellationError` (the datagram stays queued).
    nonisolated(nonsending) public func send(_ data: Data, to address: Data) async throws {
        try await send { socket, tag in socket.send(data, toAddress: address, withTimeout: -1, tag: tag) }
    }

    /// Sends `data` to `host` (a numeric address, or a name resolved off the loop) and `port`.
    nonisolated(nonsending) public func send(_ data: Data, toHost host: String, port: UInt16) async throws {
        try await send { socket, tag in socket.send(data, toHost: host, port: port, withTimeout: -1, tag: tag) }
    }

    /// Sends `data` to the peer given to ``connect(host:port:)``.
    nonisolated(nonsending) public func send(_ data: Data) async throws {
        try await send { socket, tag in socket.send(data, withTimeout: -1, tag: tag) }
    }

    /// Queues one send with a fresh tag (on the loop) and waits for its `didSend`/`didNotSend`.
    nonisolated(nonsending) private func send(_ start: @escaping @Sendable (GCDAsyncUdpSocket, Int) -> Void) async throws {
        try Task.checkCancellation()
        let socket = self.socket, handler = self.handler
        let cancellation = PendingCancellation<Int>()
        defer { HandOff.received() }
        try await withCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                let box = UncheckedSendable(continuation)
                let queued = socket.onLoop {
                    if let tag = handler.registerSend(box.value, cancellation) { start(socket, tag) }
                }
                if !queued { continuation.handOff(throwing: GCDAsyncUdpSocketError.loopShutDown) }
            }
        } onCancel: {
            socket.onLoop {
                cancellation.cancelled = true
                if let tag = cancellation.id { handler.cancelSend(tag) }
            }
        }
    }

    /// Every datagram received, until the socket is closed.
    ///
    /// ```swift
    /// for try await datagram in socket.datagrams { ... }
    /// ```
    public var datagrams: Datagrams { Datagrams(socket: self) }

    /// The datagrams of a socket, as an `AsyncSequence` (one iterator at a time).
    public struct Datagrams: AsyncSequence, Sendable {
        /// A received datagram and its sender.
        public typealias Element = Datagram
        let socket: AsyncUDPSocket

        /// Receives the next datagram; nil once the socket is closed.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let socket: AsyncUDPSocket
            /// The next datagram, or nil once the socket is closed.
            public mutating func next() async throws -> Datagram? {
                try await socket.receive()
            }
        }

        /// An iterator over the socket's datagrams.
        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(socket: socket) }
    }
}
