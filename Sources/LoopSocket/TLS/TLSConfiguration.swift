import COpenSSL
import FoundationEssentials

/// A TLS protocol version.
public enum TLSVersion: Int, Comparable, Hashable, Sendable, CaseIterable {
    /// TLS 1.2 (RFC 5246).
    case v1_2 = 0x0303
    /// TLS 1.3 (RFC 8446).
    case v1_3 = 0x0304

    /// Orders by protocol version.
    public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool { lhs.rawValue < rhs.rawValue }

    /// "TLSv1.2", "TLSv1.3", as OpenSSL names them.
    public var name: String { self == .v1_2 ? "TLSv1.2" : "TLSv1.3" }
}

/// Everything about one side of a TLS connection, as a typed value; GCDAsyncSocket's settings dictionary
/// maps onto it (see ``GCDAsyncSocket/startTLS(_:)-([String:Any]?)``).
///
/// Secure by default: TLS 1.2 at least, 1.3 preferred; a client verifies the server's chain against the
/// system's trust store and checks the host name it connected to (GCDAsyncSocket checks no name unless
/// `kCFStreamSSLPeerName` is given); renegotiation is off; servers resume sessions, clients only when asked
/// (``sessionResumption``).
///
/// ```swift
/// // A server:
/// let identity = try TLSIdentity(certificateChainFile: "cert.pem", privateKeyFile: "key.pem")
/// let serverTLS = TLSConfiguration.server(identity: identity)
/// // A client that trusts a private CA and offers HTTP/1.1 by ALPN:
/// var clientTLS = TLSConfiguration.client()
/// clientTLS.trustRoots = .certificates(try TLSCertificate.certificates(pemFile: "ca.pem"))
/// clientTLS.alpn = ["http/1.1"]
/// ```
public struct TLSConfiguration: Hashable, Sendable {
    /// Which side of the handshake.
    public enum Role: Hashable, Sendable {
        /// The side that connects: it sends the ClientHello and verifies the server's certificate.
        case client
        /// The side that accepts: it presents its certificate chain.
        case server
    }

    /// How the peer's certificate is checked.
    public enum CertificateVerification: Hashable, Sendable {
        /// The chain up to a trusted root, and on clients the host name (the default).
        case fullVerification
        /// The chain only: any name is accepted.
        case noHostnameVerification
        /// Nothing: any certificate, or none, is accepted. For tests and for manual checks only.
        case none
    }

    /// Where trusted root certificates come from.
    public enum TrustRoots: Hashable, Sendable {
        /// The system's trust store (OpenSSL's default paths: Debian's ca-certificates).
        case system
        /// These certificates only.
        case certificates([TLSCertificate])
        /// A PEM file (a bundle of roots).
        case file(String)
    }

    /// Whether a server asks for a client certificate.
    public enum ClientAuthentication: Hashable, Sendable {
        /// Not asked for (the default).
        case none
        /// Asked for and verified if sent; a client without one is accepted.
        case optional
        /// Asked for and required: a client without a valid one fails the handshake.
        case required
    }

    /// Client or server.
    public var role: Role
    /// The certificate chain and key presented: a server's, or a client's when the server asks.
    public var identity: TLSIdentity?
    /// Servers: an identity per server name (SNI), chosen by the name the client asks for. Names may be
    /// wildcards (`*.example.com`); clients asking for another name, or none, get ``identity``.
    public var serverNameIdentities: [String: TLSIdentity] = [:]
    /// Where trusted roots come from (used to verify servers, and clients with ``clientAuthentication``).
    public var trustRoots: TrustRoots = .system
    /// How the peer's certificate is verified.
    public var certificateVerification: CertificateVerification = .fullVerification
    /// Servers: whether to ask clients for a certificate.
    public var clientAuthentication: ClientAuthentication = .none
    /// The lowest version accepted (TLS 1.2; 1.0 and 1.1 are not supported).
    public var minimumVersion: TLSVersion = .v1_2
    /// The highest version offered or accepted.
    public var maximumVersion: TLSVersion = .v1_3
    /// Application protocols (ALPN), most preferred first: offered by clients, chosen from by servers.
    public var alpn: [String] = []
    /// Clients: the name sent as SNI and verified in the server's certificate. `nil` uses the host given to
    /// `connect`; an IP address is verified against the certificate's IP addresses and not sent as SNI.
    public var serverName: String?
    /// Whether sessions are resumed. Servers (on by default) issue tickets and cache sessions. Clients (off
    /// by default, as on Apple, where only `GCDAsyncSocketSSLPeerID` turns it on) offer the session of their
    /// last connection to the same peer with the same settings; setting ``sessionKey`` turns it on too.
    ///
    /// A resumed session skips the certificate checks it was made with, so a client keeps sessions apart by
    /// everything that decides trust: the context (trust roots, verification mode, manual evaluation,
    /// identity) and, within it, ``sessionKey``, the server name and the port. With
    /// ``manualTrustEvaluation`` the delegate is asked on a resumed handshake too, with the chain the
    /// session carries.
    public var sessionResumption: Bool
    /// Servers: how many TLS 1.3 session tickets a handshake issues (with ``sessionResumption``). One, where
    /// OpenSSL's default is two: each ticket costs OpenSSL 3.0 about 6% of a full handshake, and a client
    /// gets a fresh one with every resumption. Raise it for clients that open several connections at once
    /// and want each to resume (a ticket is used once); 0 issues none (TLS 1.2 resumption is unaffected).
    public var sessionTickets = 1
    /// Clients: asks for resumption, keeping sessions apart by this key besides the server name and port
    /// (GCDAsyncSocket's `GCDAsyncSocketSSLPeerID`). `nil`: the server name and port alone, when
    /// ``sessionResumption`` is on.
    public var sessionKey: Data?
    /// How long the handshake may take before the connection is closed with ``TLSError/Code/handshakeTimeout``.
    public var handshakeTimeout: Duration = .seconds(10)
    /// OpenSSL cipher list for TLS 1.2 (`ECDHE+AESGCM:...`); nil keeps OpenSSL's secure default.
    public var cipherList: String?
    /// OpenSSL cipher suites for TLS 1.3 (`TLS_AES_128_GCM_SHA256:...`); nil keeps OpenSSL's three with
    /// AES-128-GCM first (`TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256`;
    /// OpenSSL's own order puts AES-256-GCM first).
    public var cipherSuites: String?
    /// Whether OpenSSL's record buffers, a little over 16 KiB to read and as much to write, are freed while
    /// the connection idles (`SSL_MODE_RELEASE_BUFFERS`, as nginx sets it). On by default: an idle connection
    /// holds neither, for a `malloc` and a `free` of each per record read and written. Off, every connection
    /// keeps both for its life, which suits a few busy connections better than many idle ones.
    public var releasesIdleBuffers = true
    /// Certificates sent after ``identity``'s own chain (from `kCFStreamSSLCertificates`).
    var extraChainCertificates: [TLSCertificate] = []
    /// The delegate decides whether to trust the peer (`socket(_:didReceive:completionHandler:)`), instead
    /// of ``certificateVerification``. GCDAsyncSocket's `GCDAsyncSocketManuallyEvaluateTrust`.
    public var manualTrustEvaluation = false

    /// A configuration for `role` with the defaults.
    public init(role: Role) {
        self.role = role
        self.sessionResumption = role == .server
    }

    /// A client configuration: verifies the server against the system's roots and the host name.
    public static func client(serverName: String? = nil, alpn: [String] = []) -> TLSConfiguration {
        var configuration = TLSConfiguration(role: .client)
        configuration.serverName = serverName
        configuration.alpn = alpn
        return configuration
    }

    /// A server configuration presenting `identity`.
    public static func server(identity: TLSIdentity, alpn: [String] = []) -> TLSConfiguration {
        var configuration = TLSConfiguration(role: .server)
        configuration.identity = identity
        configuration.alpn = alpn
        return configuration
    }

    /// Clients: whether this connection offers and keeps sessions (``sessionResumption`` or a ``sessionKey``).
    var resumesSessions: Bool { sessionResumption || (role == .client && sessionKey != nil) }

    /// The parts that shape the `SSL_CTX` (everything but the per-connection name, key and timeout), so
    /// connections with the same settings share one context, its session cache and its ticket keys.
    var contextKey: TLSConfiguration {
        var key = self
        key.serverName = nil
        key.sessionKey = nil
        key.handshakeTimeout = .zero
        return key
    }
}
