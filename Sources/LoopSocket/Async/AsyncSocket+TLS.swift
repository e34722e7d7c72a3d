import EpollLoop
import FoundationEssentials

/// TLS for `async` code: the same layer as ``GCDAsyncSocket/startTLS(_:)-(TLSConfiguration)``, awaited.
///
/// ```swift
/// let connection = try await AsyncSocket.connect(host: "example.com", port: 443, tls: .client())
/// // or, on a connection already open (after a STARTTLS-style exchange):
/// try await connection.startTLS(.client())
/// ```
extension AsyncSocket {
    /// Starts TLS on this open connection and returns once the handshake has completed: reads and writes
    /// issued afterwards go over TLS (bytes already read stay plaintext; bytes the peer sent after them are
    /// the handshake's). Do not have a read or write of this connection in flight meanwhile.
    ///
    /// Cancellation closes the connection (a half-done handshake cannot be resumed) and throws
    /// `CancellationError`.
    /// - Throws: ``TLSError`` (verification, protocol, ``TLSConfiguration/handshakeTimeout``), the error
    ///   that closed the connection, or `CancellationError`.
    public func startTLS(_ configuration: TLSConfiguration) async throws {
        let socket = self.socket
        do {
            try await withCancellationHandler {
                try await queueStartTLSAndWait(configuration)
            } onCancel: {
                socket.disconnect()
            }
        } catch where Task.isCancelled {
            throw CancellationError()  // not the closed socket the cancellation caused
        }
        if Task.isCancelled {
            socket.disconnect()
            throw CancellationError()
        }
    }

    /// Queues `startTLS` on the loop and waits for `socketDidSecure` (or the close that ends it).
    private func queueStartTLSAndWait(_ configuration: TLSConfiguration) async throws {
        defer { HandOff.received() }
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            let box = UncheckedSendable(continuation)
            let queued = socket.onLoop { [socket, handler] in
                if let failure = handler.failure { return box.value.handOff(throwing: failure) }
                if !socket.isPlaintext || handler.secureContinuation != nil {
                    return box.value.handOff(throwing: TLSError(.badConfiguration, "TLS was already started on this connection"))
                }
                handler.secureContinuation = box.value
                socket.startTLS(configuration)
            }
            if !queued { continuation.handOff(throwing: GCDAsyncSocketError.loopShutDown) }
        }
    }

    /// What the TLS handshake negotiated (version, cipher, ALPN, server name, resumption, peer
    /// certificates); nil before TLS is up. Any thread.
    public var tlsInfo: TLSConnectionInfo? { socket.tlsInfo }
}
