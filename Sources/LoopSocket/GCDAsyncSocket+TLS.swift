import COpenSSL
import EpollLoop
import FoundationEssentials
import Glibc

/// TLS, GCDAsyncSocket's way: `startTLS` queues a marker in both queues; when both queues reach it the
/// handshake starts, and every read and write queued after it goes over TLS.
///
/// ```swift
/// // Server, in didAcceptNewSocket:
/// newSocket.startTLS([kCFStreamSSLIsServer: true, kCFStreamSSLCertificates: [identity]])
/// newSocket.readData(to: Data("\r\n\r\n".utf8), withTimeout: 30, tag: 0)   // read over TLS
/// // Client, in didConnectToHost (verifies the host it connected to):
/// sock.startTLS(nil)
/// ```
extension GCDAsyncSocket {
    /// Starts TLS with GCDAsyncSocket's settings dictionary (see docs/tls.md for every key), or `nil` for a
    /// client with the secure defaults. Invalid settings (or a legacy key GCDAsyncSocket rejects) close
    /// the socket with an error when the handshake would start, as GCDAsyncSocket does.
    public func startTLS(_ tlsSettings: [String: Any]?) {
        let start: TLSStart
        do {
            start = TLSStart(try TLSConfiguration(gcdAsyncSocketSettings: tlsSettings ?? [:]))
        } catch {
            start = TLSStart(error)
        }
        queueStartTLS(start)
    }

    /// Starts TLS with a typed configuration; queued like ``startTLS(_:)-([String:Any]?)``.
    public func startTLS(_ configuration: TLSConfiguration) {
        queueStartTLS(TLSStart(configuration))
    }

    /// Whether the TLS handshake has completed (and the connection is still open). Any thread.
    public var isSecure: Bool { withSharedState { $0.tls != nil } }

    /// What the TLS handshake negotiated: version, cipher, ALPN protocol, server name, resumption, the
    /// peer's certificates. Nil before the handshake completes. Any thread.
    public var tlsInfo: TLSConnectionInfo? { withSharedState { $0.tls } }
}
