import FoundationEssentials

/// The rarer things a connection reports to its sink (``ConnectionEngine/sinkReport(_:)``). The hot ones,
/// a read and a write, and the last, the disconnect, have sink methods of their own.
enum ConnectionReport {
    /// Connected to `host` (the address it connected to) and `port`.
    case connected(host: String, port: UInt16)
    /// Connected to the Unix-domain socket at `url`.
    case connectedToURL(URL)
    /// A listening descriptor's `accept` failed (the listener goes on).
    case acceptFailed(ConnectionError)
    /// Bytes arrived for the read at the front without completing it (`length`: its bytes so far).
    case readProgress(length: Int, tag: Int)
    /// A read failed; the connection goes on.
    case readFailed(tag: Int, error: ConnectionError)
    /// The peer finished its stream (`autoDisconnectOnClosedReadStream` off).
    case readStreamClosed
    /// Part of the write at the front went out (`length`: its bytes so far).
    case writeProgress(length: Int, tag: Int)
    /// A write failed, or was dropped by a close.
    case writeFailed(tag: Int, error: ConnectionError)
    /// The write queue crossed a water mark.
    case writabilityChanged(Bool)
    /// The TLS handshake completed.
    case secured
}
