import COpenSSL
import FoundationEssentials
import Synchronization

/// The peer's certificate chain, handed to the delegate for manual trust evaluation: Linux's stand-in for
/// `SecTrust` in `socket(_:didReceive:completionHandler:)`.
///
/// ```swift
/// func socket(_ sock: GCDAsyncSocket, didReceive trust: TLSTrust, completionHandler: @escaping @Sendable (Bool) -> Void) {
///     // The checks automatic verification would make, then a pin of our own:
///     let pinned = trust.certificates.first?.derBytes == expectedLeaf
///     completionHandler(trust.evaluate() == nil && pinned)
/// }
/// ```
///
/// To trust a CA of the app's own (`SecTrustSetAnchorCertificates` on Apple), give it as an anchor before
/// evaluating:
///
/// ```swift
/// trust.setAnchorCertificates(myCA)              // only these; `only: false` keeps the configured roots too
/// completionHandler(trust.evaluate() == nil)     // the chain up to myCA, and the host name
/// ```
public final class TLSTrust: @unchecked Sendable {
    // Thread-safety: the chain and name are immutable; the anchors are behind their mutex; the context's
    // trust store is read-only once built.
    /// The peer's certificates as it sent them, its own (the leaf) first.
    public let certificates: [TLSCertificate]
    /// The name verification checks: the server name on clients, nil on servers.
    public let hostName: String?
    private let context: TLSContext
    private let anchors = Mutex(Anchors())

    /// What ``evaluate()`` trusts besides (or instead of) the configuration's roots.
    private struct Anchors {
        var certificates: [TLSCertificate]?
        var only = true
    }

    init(certificates: [TLSCertificate], hostName: String?, context: TLSContext) {
        self.certificates = certificates
        self.hostName = hostName
        self.context = context
    }

    /// Root certificates ``evaluate()`` trusts, as `SecTrustSetAnchorCertificates` sets them: with
    /// ``anchorCertificatesOnly`` (the default) only these, else these and the configuration's
    /// ``TLSConfiguration/trustRoots`` (the system's store by default). `nil` (the default): the
    /// configuration's roots alone. An empty list with ``anchorCertificatesOnly`` trusts nothing.
    public var anchorCertificates: [TLSCertificate]? {
        get { anchors.withLock { $0.certificates } }
        set { anchors.withLock { $0.certificates = newValue } }
    }

    /// Whether ``anchorCertificates``, once set, are the only roots trusted (`true`, the default, as on Apple)
    /// or come on top of the configuration's (`false`; `SecTrustSetAnchorCertificatesOnly(trust, false)`).
    public var anchorCertificatesOnly: Bool {
        get { anchors.withLock { $0.only } }
        set { anchors.withLock { $0.only = newValue } }
    }

    /// Sets ``anchorCertificates`` and ``anchorCertificatesOnly`` together.
    public func setAnchorCertificates(_ certificates: [TLSCertificate], only: Bool = true) {
        anchors.withLock { $0 = Anchors(certificates: certificates, only: only) }
    }

    /// Verifies the chain against the trusted roots (the ``anchorCertificates`` if set, else the
    /// configuration's) and ``hostName`` when set, as automatic verification would: on a client, the server's
    /// certificate for TLS server use and the name (a wildcard only as a whole left-most label); on a server,
    /// the client's certificate for TLS client use. Returns nil when the chain is trusted, else why not.
    public func evaluate() -> TLSError? {
        guard let leaf = certificates.first else {
            return TLSError(.certificateVerificationFailed, "The peer sent no certificate")
        }
        guard let chain = lsock_chain_new() else { return TLSError(.certificateVerificationFailed, "Out of memory") }
        defer { lsock_chain_free(chain) }
        for certificate in certificates.dropFirst() { _ = lsock_chain_push(chain, certificate.x509) }
        let store: OpaquePointer
        let anchors = self.anchors.withLock { $0 }
        if let roots = anchors.certificates {
            do throws(TLSError) {
                store = try Self.store(roots, plus: anchors.only ? nil : context.configuration.trustRoots)
            } catch {
                return error
            }
        } else {
            guard let shared = SSL_CTX_get_cert_store(context.ctx), X509_STORE_up_ref(shared) == 1 else {
                return TLSError(.certificateVerificationFailed, "No trust store")
            }
            store = shared
        }
        defer { X509_STORE_free(store) }
        // A server's peer is a client: its certificate is checked as one (extendedKeyUsage clientAuth), as
        // the handshake checks it with automatic verification.
        let peerIsClient: Int32 = context.configuration.role == .server ? 1 : 0
        let result = hostName.withOptionalCString { host in lsock_verify_chain(store, leaf.x509, chain, host, peerIsClient) }
        guard result != X509_V_OK else { return nil }
        return TLSError.verification(Int(result))
    }

    /// Whether ``evaluate()`` finds the chain trusted.
    public var isTrusted: Bool { evaluate() == nil }

    /// A store holding `anchors`, and `roots` when given (the caller frees it).
    private static func store(
        _ anchors: [TLSCertificate], plus roots: TLSConfiguration.TrustRoots?
    ) throws(TLSError) -> OpaquePointer {
        guard let store = X509_STORE_new() else { throw TLSError(.certificateVerificationFailed, "Out of memory") }
        do throws(TLSError) {
            try TLSConfiguration.TrustRoots.certificates(anchors).load(into: store)
            try roots?.load(into: store)
        } catch {
            X509_STORE_free(store)
            throw TLSError(.certificateVerificationFailed, error.reason)
        }
        return store
    }
}

extension TLSError {
    /// A verification failure with OpenSSL's description of `result`.
    static func verification(_ result: Int) -> TLSError {
        let text = X509_verify_cert_error_string(result).map { String(cString: $0) } ?? "verification error \(result)"
        return TLSError(
            .certificateVerificationFailed, "certificate verify failed", verificationResult: result, verificationFailure: text)
    }
}
