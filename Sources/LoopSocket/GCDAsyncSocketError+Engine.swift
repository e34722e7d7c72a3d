import EpollLoop

/// The face's reading of the engine's ``ConnectionError``: GCDAsyncSocket's code and message for each kind, a
/// failed system call with its `errno` and call, another layer's error (TLS, DNS) as it is.
extension GCDAsyncSocketError {
    /// The error the face reports for `error`, as `any Error`: the usual ends of a connection (the peer's end,
    /// a reset, a close with operations queued) are boxed once, not per connection.
    static func reporting(_ error: ConnectionError) -> any Error {
        switch error.kind {
        case .closedByPeer: closedByPeer
        case .readDroppedByClose: disconnected
        case .writeDroppedByClose: disconnectedBeforeWrite
        case .systemCall: closing(error.failure!)
        case .passedThrough: (error.underlying as? ResolverError).map(GCDAsyncSocketError.init) ?? error.underlying!
        default: GCDAsyncSocketError(error)
        }
    }

    /// The face's error for `error` (a passed-through error of another type becomes `otherError` with its
    /// description: use ``reporting(_:)`` where the error may be of any type).
    init(_ error: ConnectionError) {
        switch error.kind {
        case .closedByPeer: self.init(.closedError, "Socket closed by remote peer")
        case .readDroppedByClose: self.init(.closedError, "The socket disconnected")
        case .writeDroppedByClose: self.init(.closedError, "The socket disconnected before the write completed")
        case .readDroppedByFinishWriting: self.init(.closedError, "Reads dropped by disconnectAfterWriting")
        case .notOpen: self.init(.closedError, "The socket is closed")
        case .readTimeout: self = .readTimeout
        case .writeTimeout: self = .writeTimeout
        case .connectTimeout: self = .connectTimeout
        case .readMaxedOut: self = .readMaxedOut
        case .loopShutDown: self = .loopShutDown
        case .alreadyStarted:
            self.init(.badConfigError, "Attempting to connect or accept while connected, connecting or accepting. Disconnect first.")
        case .noFamilyEnabled: self.init(.badConfigError, "Both IPv4 and IPv6 are disabled")
        case .noEnabledAddress: self.init(.badConfigError, "No address of an enabled IP family")
        case .noAddressConnected: self.init(.otherError, "Could not connect to any address")
        case .writeNotConnected: self.init(.badConfigError, "Write on a socket that is not connected")
        case .writeAfterFinish: self.init(.badConfigError, "Write after the socket was told to finish writing")
        case .writeQueueFull: self.init(.otherError, "Write queue full: \(error.detail ?? "")")
        case .systemCall: self.init(error.failure!)
        case .registration: self.init(.otherError, error.detail ?? "")
        case .passedThrough:
            if let same = error.underlying as? GCDAsyncSocketError {
                self = same
            } else if let unresolved = error.underlying as? ResolverError {
                self.init(unresolved)
            } else {
                self.init(.otherError, "\(error.underlying.map { "\($0)" } ?? "")")
            }
        }
    }

    /// A host that did not resolve: `badParamError`, naming the host and the resolver's reason.
    init(_ error: ResolverError) {
        self.init(.badParamError, error.message)
    }

    /// Runs `body`, a call into the engine, throwing the face's error for the engine's.
    static func reporting<T>(_ body: () throws(ConnectionError) -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw GCDAsyncSocketError.reporting(error)
        }
    }
}
