import COpenSSL
import FoundationEssentials

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
public final class TLSTrust: @unchecked Sendable {
    // Thread-safety: immutable; the context's trust store is read-only once built.
    /// The peer's certificates as it sent them, its own (the leaf) first.
    public let certificates: [TLSCertificate]
    /// The name verification checks: the server name on clients, nil on servers.
    public let hostName: String?
    private let context: TLSContext

    init(certificates: [TLSCertificate], hostName: String?, context: TLSContext) {
        self.certificates = certificates
        self.hostName = hostName
        self.context = context
    }

    /// Verifies the chain against the configuration's trust roots (and ``hostName`` when set), as automatic
    /// verification would. Returns nil when the chain is trusted, else why not.
    public func evaluate() -> TLSError? {
        guard let leaf = certificates.first else {
            return TLSError(.certificateVerificationFailed, "The peer sent no certificate")
        }
        guard let chain = lsock_chain_new() else { return TLSError(.certificateVerificationFailed, "Out of memory") }
        defer { lsock_chain_free(chain) }
        for certificate in certificates.dropFirst() { _ = lsock_chain_push(chain, certificate.x509) }
        let result = hostName.withOptionalCString { host in
            lsock_verify_chain(SSL_CTX_get_cert_store(context.ctx), leaf.x509, chain, host)
        }
        guard result != X509_V_OK else { return nil }
        return TLSError.verification(Int(result))
    }

    /// Whether ``evaluate()`` finds the chain trusted.
    public var isTrusted: Bool { evaluate() == nil }
}

extension TLSError {
    /// A verification failure with OpenSSL's description of `result`.
    static func verification(_ result: Int) -> TLSError {
        let text = X509_verify_cert_error_string(result).map { String(cString: $0) } ?? "verification error \(result)"
        return TLSError(
            .certificateVerificationFailed, "certificate verify failed", verificationResult: result, verificationFailure: text)
    }
}
