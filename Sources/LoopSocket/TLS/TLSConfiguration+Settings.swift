import COpenSSL
import FoundationEssentials

// GCDAsyncSocket's TLS settings keys, by their GCDAsyncSocket names. On Apple systems the `kCFStreamSSL…`
// keys are `CFString`s written `kCFStreamSSLPeerName as String`; here they are `String`s, so that spelling
// still compiles.

/// The server name to verify and send as SNI (a `String`).
public let kCFStreamSSLPeerName = "kCFStreamSSLPeerName"
/// Whether this side is the server (a `Bool`).
public let kCFStreamSSLIsServer = "kCFStreamSSLIsServer"
/// The identity (a ``TLSIdentity``, Linux's `SecIdentity`) followed by extra chain certificates
/// (``TLSCertificate``s).
public let kCFStreamSSLCertificates = "kCFStreamSSLCertificates"
/// The delegate evaluates trust (`socket(_:didReceive:completionHandler:)`); other trust keys are ignored.
public let GCDAsyncSocketManuallyEvaluateTrust = "GCDAsyncSocketManuallyEvaluateTrust"
/// The lowest protocol version: SecureTransport's `SSLProtocol` value (`kTLSProtocol12` = 8,
/// `kTLSProtocol13` = 10), a `tls_protocol_version_t` (0x0303, 0x0304) or a ``TLSVersion``.
public let GCDAsyncSocketSSLProtocolVersionMin = "GCDAsyncSocketSSLProtocolVersionMin"
/// The highest protocol version, in the same forms as the minimum.
public let GCDAsyncSocketSSLProtocolVersionMax = "GCDAsyncSocketSSLProtocolVersionMax"
/// Application protocols to offer or accept by ALPN (an array of `String`).
public let GCDAsyncSocketSSLALPN = "GCDAsyncSocketSSLALPN"
/// Cipher suites by their IANA numbers (an array of integers, as SecureTransport's `SSLCipherSuite`).
public let GCDAsyncSocketSSLCipherSuites = "GCDAsyncSocketSSLCipherSuites"
/// Clients: resume sessions, keeping them apart by this key (`Data`) besides the server name and port.
/// Without it (or ``LoopSocketTLSSessionResumption``) a client makes a full handshake every time, as on Apple.
public let GCDAsyncSocketSSLPeerID = "GCDAsyncSocketSSLPeerID"
/// This library's key: the trusted roots (``TLSConfiguration/trustRoots``), as an array of
/// ``TLSCertificate``s (only these), a `String` path of a PEM bundle, or a ``TLSConfiguration/TrustRoots``.
/// With `GCDAsyncSocketManuallyEvaluateTrust` they are what ``TLSTrust/evaluate()`` checks against.
public let LoopSocketTLSTrustRoots = "LoopSocketTLSTrustRoots"
/// This library's key: whether a client resumes sessions (a `Bool`; ``TLSConfiguration/sessionResumption``),
/// by server name and port, without a `GCDAsyncSocketSSLPeerID`. Servers resume unless it is false.
public let LoopSocketTLSSessionResumption = "LoopSocketTLSSessionResumption"
/// Accepted and ignored: OpenSSL has no false start for TLS 1.3, and TLS 1.2 false start is off.
public let GCDAsyncSocketSSLSessionOptionFalseStart = "GCDAsyncSocketSSLSessionOptionFalseStart"
/// Accepted and ignored: the 1/n-1 record split only guarded TLS 1.0's CBC suites, which are not offered.
public let GCDAsyncSocketSSLSessionOptionSendOneByteRecord = "GCDAsyncSocketSSLSessionOptionSendOneByteRecord"
/// Accepted and ignored: OpenSSL picks its own ephemeral Diffie-Hellman groups.
public let GCDAsyncSocketSSLDiffieHellmanParameters = "GCDAsyncSocketSSLDiffieHellmanParameters"
/// Accepted and ignored (iOS only in GCDAsyncSocket).
public let GCDAsyncSocketUseCFStreamForTLS = "GCDAsyncSocketUseCFStreamForTLS"
/// Rejected, as GCDAsyncSocket rejects it: use manual trust evaluation.
public let kCFStreamSSLAllowsAnyRoot = "kCFStreamSSLAllowsAnyRoot"
/// Rejected, as GCDAsyncSocket rejects it: use manual trust evaluation.
public let kCFStreamSSLAllowsExpiredRoots = "kCFStreamSSLAllowsExpiredRoots"
/// Rejected, as GCDAsyncSocket rejects it: use manual trust evaluation.
public let kCFStreamSSLAllowsExpiredCertificates = "kCFStreamSSLAllowsExpiredCertificates"
/// Rejected, as GCDAsyncSocket rejects it: use manual trust evaluation.
public let kCFStreamSSLValidatesCertificateChain = "kCFStreamSSLValidatesCertificateChain"
/// Rejected, as GCDAsyncSocket rejects it: use `GCDAsyncSocketSSLProtocolVersionMin`/`Max`.
public let kCFStreamSSLLevel = "kCFStreamSSLLevel"

extension TLSConfiguration {
    /// The configuration GCDAsyncSocket's settings dictionary describes.
    ///
    /// Unlike GCDAsyncSocket, a client verifies the host name it connected to when `kCFStreamSSLPeerName`
    /// is absent; a client resumes sessions only when asked (`GCDAsyncSocketSSLPeerID` or
    /// ``LoopSocketTLSSessionResumption``). Keys this library adds: ``LoopSocketTLSTrustRoots`` and
    /// ``LoopSocketTLSSessionResumption``; use the typed ``TLSConfiguration`` for client authentication,
    /// server names and the handshake timeout.
    ///
    /// - Throws: ``TLSError`` (`badConfiguration`) for a legacy key (with GCDAsyncSocket's message), a value
    ///   of the wrong type, or a version below TLS 1.2.
    public init(gcdAsyncSocketSettings settings: [String: Any]) throws(TLSError) {
        for key in [kCFStreamSSLAllowsAnyRoot, kCFStreamSSLAllowsExpiredRoots, kCFStreamSSLAllowsExpiredCertificates,
                    kCFStreamSSLValidatesCertificateChain] where settings[key] != nil {
            throw TLSError(.badConfiguration, "Security option unavailable - \(key) - You must use manual trust evaluation")
        }
        if settings[kCFStreamSSLLevel] != nil {
            throw TLSError(.badConfiguration,
                           "Security option unavailable - kCFStreamSSLLevel - You must use GCDAsyncSocketSSLProtocolVersionMin & GCDAsyncSocketSSLProtocolVersionMax")
        }
        let isServer = try Self.bool(settings, kCFStreamSSLIsServer) ?? false
        self.init(role: isServer ? .server : .client)
        manualTrustEvaluation = try Self.bool(settings, GCDAsyncSocketManuallyEvaluateTrust) ?? false
        serverName = try Self.value(settings, kCFStreamSSLPeerName, as: String.self)
        if let certificates = try Self.value(settings, kCFStreamSSLCertificates, as: [Any].self) {
            identity = try Self.identity(certificates)
            extraChainCertificates = try Self.chain(certificates)
        }
        if let min = settings[GCDAsyncSocketSSLProtocolVersionMin] { minimumVersion = try Self.version(min) }
        if let max = settings[GCDAsyncSocketSSLProtocolVersionMax] { maximumVersion = try Self.version(max) }
        alpn = try Self.value(settings, GCDAsyncSocketSSLALPN, as: [String].self) ?? []
        sessionKey = try Self.value(settings, GCDAsyncSocketSSLPeerID, as: Data.self)
        if let resume = try Self.bool(settings, LoopSocketTLSSessionResumption) { sessionResumption = resume }
        if let roots = settings[LoopSocketTLSTrustRoots] { trustRoots = try Self.trustRoots(roots) }
        if let suites = settings[GCDAsyncSocketSSLCipherSuites] {
            guard let numbers = suites as? [Any] else { throw Self.wrongType(GCDAsyncSocketSSLCipherSuites) }
            (cipherList, cipherSuites) = try Self.cipherNames(numbers)
            // SecureTransport offers only the listed suites: no list for one version means not that version.
            if cipherList == nil { minimumVersion = .v1_3 }
            if cipherSuites == nil { cipherSuites = "" }
        }
    }

    private static func wrongType(_ key: String) -> TLSError {
        TLSError(.badConfiguration, "Invalid value for \(key)")
    }

    private static func value<T>(_ settings: [String: Any], _ key: String, as type: T.Type) throws(TLSError) -> T? {
        guard let value = settings[key] else { return nil }
        guard let typed = value as? T else { throw wrongType(key) }
        return typed
    }

    private static func bool(_ settings: [String: Any], _ key: String) throws(TLSError) -> Bool? {
        guard let value = settings[key] else { return nil }
        if let flag = value as? Bool { return flag }
        if let number = value as? Int { return number != 0 }
        throw wrongType(key)
    }

    /// `kCFStreamSSLCertificates`: the identity first, then extra chain certificates.
    private static func identity(_ items: [Any]) throws(TLSError) -> TLSIdentity {
        guard let identity = items.first as? TLSIdentity else {
            throw TLSError(.badConfiguration, "kCFStreamSSLCertificates must start with a TLSIdentity (Linux's SecIdentity)")
        }
        return identity
    }

    private static func chain(_ items: [Any]) throws(TLSError) -> [TLSCertificate] {
        let extra = items.dropFirst().compactMap { $0 as? TLSCertificate }
        guard extra.count == items.count - 1 else {
            throw TLSError(.badConfiguration, "kCFStreamSSLCertificates: items after the identity must be TLSCertificates")
        }
        return extra
    }

    /// `LoopSocketTLSTrustRoots`: certificates, a PEM file's path, or the typed value.
    private static func trustRoots(_ value: Any) throws(TLSError) -> TrustRoots {
        if let roots = value as? TrustRoots { return roots }
        if let path = value as? String { return .file(path) }
        if let certificates = value as? [TLSCertificate] { return .certificates(certificates) }
        if let items = value as? [Any] {
            let certificates = items.compactMap { $0 as? TLSCertificate }
            if certificates.count == items.count { return .certificates(certificates) }
        }
        throw wrongType(LoopSocketTLSTrustRoots)
    }

    /// SecureTransport's `SSLProtocol` numbers, TLS wire versions, or ``TLSVersion``.
    private static func version(_ value: Any) throws(TLSError) -> TLSVersion {
        if let version = value as? TLSVersion { return version }
        guard let number = value as? Int else { throw wrongType("GCDAsyncSocketSSLProtocolVersionMin/Max") }
        switch number {
        case 8, 0x0303: return .v1_2  // kTLSProtocol12, tls_protocol_version_TLSv12
        case 10, 999, 0x0304: return .v1_3  // kTLSProtocol13, kTLSProtocolMaxSupported, tls_protocol_version_TLSv13
        case 2, 3, 4, 6, 7, 0x0300, 0x0301, 0x0302:
            throw TLSError(.badConfiguration, "SSL 3.0, TLS 1.0 and TLS 1.1 are not supported: the minimum is TLS 1.2")
        default:
            throw TLSError(.badConfiguration, "Unknown protocol version \(number)")
        }
    }

    /// IANA cipher suite numbers → OpenSSL's TLS 1.2 cipher list and TLS 1.3 suite list.
    private static func cipherNames(_ numbers: [Any]) throws(TLSError) -> (String?, String?) {
        guard let ctx = SSL_CTX_new(TLS_method()), let ssl = SSL_new(ctx) else {
            throw TLSError.fromQueue(.badConfiguration, "Out of memory")
        }
        defer {
            SSL_free(ssl)
            SSL_CTX_free(ctx)
        }
        var list: [String] = []
        var suites: [String] = []
        for item in numbers {
            guard let number = item as? Int, (0...0xFFFF).contains(number) else { throw wrongType(GCDAsyncSocketSSLCipherSuites) }
            let bytes: [UInt8] = [UInt8(number >> 8), UInt8(number & 0xFF)]
            guard let cipher = SSL_CIPHER_find(ssl, bytes), let name = SSL_CIPHER_get_name(cipher) else { continue }
            if (0x1301...0x1305).contains(number) { suites.append(String(cString: name)) } else { list.append(String(cString: name)) }
        }
        guard !list.isEmpty || !suites.isEmpty else {
            throw TLSError(.badConfiguration, "None of the cipher suites in GCDAsyncSocketSSLCipherSuites is supported")
        }
        return (list.isEmpty ? nil : list.joined(separator: ":"), suites.isEmpty ? nil : suites.joined(separator: ":"))
    }
}
