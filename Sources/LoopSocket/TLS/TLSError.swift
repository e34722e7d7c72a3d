import COpenSSL
import FoundationEssentials

/// Why a TLS handshake or connection failed, with OpenSSL's reason and, for certificate problems, the
/// verification failure ("certificate has expired", "hostname mismatch").
///
/// Delivered through `socketDidDisconnect(_:withError:)` (and thrown by ``AsyncSocket``'s TLS calls). As an
/// `NSError` it reads as GCDAsyncSocket's TLS errors do: the domain `kCFStreamErrorDomainSSL` and
/// SecureTransport's `OSStatus` for the same failure as the code (``secureTransportCode``).
///
/// ```swift
/// func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
///     if let err = err as? TLSError, err.code == .certificateVerificationFailed {
///         print(err.verificationFailure ?? err.reason)
///     }
/// }
/// ```
public struct TLSError: Error, Hashable, Sendable, CustomStringConvertible, ErrorFacade {
    /// What kind of failure.
    public enum Code: Int, Hashable, Sendable {
        /// The settings cannot be used (a missing identity, an unreadable file, a legacy key).
        case badConfiguration = 1
        /// The peer's certificate failed verification (see ``TLSError/verificationFailure``).
        case certificateVerificationFailed
        /// The delegate's manual trust evaluation rejected the peer.
        case trustRejected
        /// The handshake failed (no common version or cipher, an alert from the peer, not TLS at all).
        case handshakeFailed
        /// The handshake did not finish within the configured time.
        case handshakeTimeout
        /// The peer closed the connection during the handshake.
        case closedDuringHandshake
        /// The peer closed the TCP stream without a TLS close_notify: the data may have been cut short.
        case closedWithoutNotify
        /// A record could not be decrypted or parsed after the handshake.
        case protocolError
        /// The password does not open the PKCS#12 data: its integrity check (MAC) failed, or, in data without
        /// one, the contents did not decrypt.
        case wrongPassword
        /// The PKCS#12 data needs an algorithm this OpenSSL does not provide; the reason names it, and says when
        /// OpenSSL's legacy provider (RC2, single DES) could not be loaded.
        case unsupportedAlgorithm
        /// The data is not PKCS#12, or is cut short or damaged.
        case malformedData
        /// Opening the PKCS#12 data would take more key-derivation iterations (its MAC's and encryptions'
        /// counts added up) than allowed (``TLSIdentity/defaultPKCS12IterationLimit``, or the limit given to
        /// ``TLSIdentity/init(pkcs12:password:iterationLimit:)``); the reason says which count passed it.
        case iterationLimitExceeded
    }

    /// The code and OpenSSL's reason (as the core's message), shared in form and logic with the other error
    /// types; a TLS failure has no `errno` of its own.
    let core: ErrorCore<Code>
    /// OpenSSL's packed error code, when OpenSSL reported one.
    public let openSSLError: UInt
    /// The certificate verification failure in OpenSSL's words, when verification failed.
    public let verificationFailure: String?
    /// ``verificationResult`` as OpenSSL has it, a C `int` (`X509_V_ERR_*`): an `Int?` here would take 9
    /// bytes where this takes 5, and TLSError past the 64 bytes it has always fitted in.
    private let x509VerifyResult: Int32?

    /// What kind of failure.
    public var code: Code { core.code }
    /// OpenSSL's reason ("certificate verify failed", "unsupported protocol"), or ours.
    public var reason: String { core.message }
    /// OpenSSL's `X509_V_ERR_*` value, when verification failed.
    public var verificationResult: Int? { x509VerifyResult.map(Int.init) }

    init(_ code: Code, _ reason: String, verificationResult: Int? = nil, verificationFailure: String? = nil, openSSLError: UInt = 0) {
        self.core = ErrorCore(code, message: reason)
        self.openSSLError = openSSLError
        self.verificationFailure = verificationFailure
        self.x509VerifyResult = verificationResult.map { Int32(truncatingIfNeeded: $0) }
    }

    /// An error carrying the first entry of OpenSSL's error queue (which it empties), or `fallback`.
    static func fromQueue(_ code: Code, _ fallback: String) -> TLSError {
        var buffer = [CChar](repeating: 0, count: 256)
        let packed = lsock_drain_errors(&buffer, buffer.count)
        guard packed != 0 else { return TLSError(code, fallback) }
        let reason = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return TLSError(code, "\(fallback): \(reason)", openSSLError: packed)
    }

    /// One sentence: the reason, and the verification failure when there is one.
    public var message: String {
        guard let verificationFailure else { return reason }
        return "\(reason) (\(verificationFailure))"
    }

    /// The `OSStatus` SecureTransport reports for the same failure (its `errSSL…` constants), which is the
    /// `NSError` code, so ported code that compares codes keeps working.
    public var secureTransportCode: Int {
        switch code {
        // A PKCS#12 failure has no SecureTransport status of its own: it keeps the one it had as a bad configuration.
        case .badConfiguration, .wrongPassword, .unsupportedAlgorithm, .malformedData, .iterationLimitExceeded: return -9848  // errSSLBadConfiguration
        case .trustRejected: return -9807  // errSSLXCertChainInvalid
        case .handshakeTimeout, .closedDuringHandshake: return -9806  // errSSLClosedAbort
        case .closedWithoutNotify: return -9816  // errSSLClosedNoNotify
        case .protocolError: return -9800  // errSSLProtocol
        case .certificateVerificationFailed:
            switch Int32(verificationResult ?? 0) {
            case X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID: return -9814  // errSSLCertExpired
            case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH: return -9843  // errSSLHostNameMismatch
            case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
                 X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
                return -9812  // errSSLUnknownRootCert
            default: return -9807  // errSSLXCertChainInvalid
            }
        case .handshakeFailed:
            switch lsock_error_reason(openSSLError) {
            case SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, SSL_R_NO_PROTOCOLS_AVAILABLE:
                return -9836  // errSSLPeerProtocolVersion
            case SSL_R_TLSV1_ALERT_UNKNOWN_CA: return -9833  // errSSLPeerUnknownCA
            case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE: return -9825  // errSSLPeerBadCert
            case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED: return -9828  // errSSLPeerCertExpired
            case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE, SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
                return -9808  // errSSLBadCert
            case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE: return -9824  // errSSLPeerHandshakeFail
            default: return -9800  // errSSLProtocol
            }
        }
    }

    static let handshakeTimedOut = TLSError(.handshakeTimeout, "The TLS handshake timed out")
    static let closedInHandshake = TLSError(.closedDuringHandshake, "The peer closed the connection during the TLS handshake")
    static let cutWithoutNotify = TLSError(
        .closedWithoutNotify, "The peer closed the connection without a TLS close_notify: the data may be truncated")
}

/// `err.localizedDescription` is the message.
extension TLSError: LocalizedError {}

/// Matches an error against a ``TLSError/Code``: `catch TLSError.Code.handshakeTimeout`.
public func ~= (code: TLSError.Code, error: any Error) -> Bool {
    (error as? TLSError)?.code == code
}
