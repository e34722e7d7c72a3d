import COpenSSL
import FoundationEssentials

/// A certificate chain and its private key: what a server (or a client asked for a certificate) presents.
///
/// Linux has no keychain and no `SecIdentity`; a `TLSIdentity` takes its place, including as the first
/// element of GCDAsyncSocket's `kCFStreamSSLCertificates` array:
///
/// ```swift
/// let identity = try TLSIdentity(certificateChainFile: "server.pem", privateKeyFile: "server.key")
/// sock.startTLS([kCFStreamSSLIsServer: true, kCFStreamSSLCertificates: [identity]])
/// ```
public final class TLSIdentity: @unchecked Sendable, Hashable {
    // Thread-safety: immutable after init; OpenSSL's reference counts are atomic.
    /// The leaf first, then the intermediates, as they are sent.
    public let certificates: [TLSCertificate]
    let privateKey: OpaquePointer

    private init(certificates: [TLSCertificate], privateKey: OpaquePointer) throws(TLSError) {
        guard !certificates.isEmpty else {
            EVP_PKEY_free(privateKey)
            throw TLSError(.badConfiguration, "An identity needs a certificate")
        }
        guard X509_check_private_key(certificates[0].x509, privateKey) == 1 else {
            EVP_PKEY_free(privateKey)
            throw TLSError.fromQueue(.badConfiguration, "The private key does not match the certificate")
        }
        self.certificates = certificates
        self.privateKey = privateKey
    }

    deinit {
        EVP_PKEY_free(privateKey)
    }

    /// An identity from PEM text: the certificate chain (leaf first) and the private key (PKCS#8, PKCS#1
    /// or SEC1; encrypted keys need `password`).
    public convenience init(certificateChainPEM: Data, privateKeyPEM: Data, password: String? = nil) throws(TLSError) {
        let chain = try TLSCertificate.certificates(pem: certificateChainPEM)
        let key = try withMemoryBIO(privateKeyPEM) { bio throws(TLSError) -> OpaquePointer in
            // No password is an empty one: given none at all, OpenSSL would ask for it on the terminal.
            let key: OpaquePointer? = (password ?? "").withCString { pass in
                PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(mutating: pass))
            }
            guard let key else { throw TLSError.fromQueue(.badConfiguration, "Cannot read the private key") }
            return key
        }
        try self.init(certificates: chain, privateKey: key)
    }

    /// An identity from a PEM certificate (chain) file and a PEM key file, as nginx's
    /// `ssl_certificate` and `ssl_certificate_key` take them.
    public convenience init(certificateChainFile: String, privateKeyFile: String, password: String? = nil) throws(TLSError) {
        try self.init(
            certificateChainPEM: readFile(certificateChainFile), privateKeyPEM: readFile(privateKeyFile), password: password)
    }

    /// An identity from PKCS#12 data (a `.p12` or `.pfx` file's bytes) and its password, as `SecPKCS12Import`
    /// takes it on Apple systems: the private key, the certificate matching it, and the other certificates as
    /// its chain.
    ///
    /// Reads what Apple's tools and OpenSSL 1.x write (certificates encrypted with RC2, 40- or 128-bit, or
    /// 3DES; the key with 3DES) as well as OpenSSL 3's AES-256 with PBKDF2. RC2 comes from OpenSSL's legacy
    /// provider, loaded into a library context used only for PKCS#12, never for TLS.
    ///
    /// - Throws: ``TLSError`` with ``TLSError/Code/wrongPassword`` (the integrity check failed),
    ///   ``TLSError/Code/unsupportedAlgorithm`` (the reason names the algorithm, and says when OpenSSL's legacy
    ///   provider is missing), ``TLSError/Code/malformedData`` (not PKCS#12, cut short or damaged),
    ///   ``TLSError/Code/iterationLimitExceeded`` (opening it would take more than
    ///   ``defaultPKCS12IterationLimit`` key-derivation iterations), or ``TLSError/Code/badConfiguration`` (no
    ///   private key, or no certificate for it).
    public convenience init(pkcs12: Data, password: String) throws(TLSError) {
        try self.init(pkcs12: pkcs12, password: password, iterationLimit: Self.defaultPKCS12IterationLimit)
    }

    /// An identity from PKCS#12 data, as ``init(pkcs12:password:)``, spending at most `iterationLimit`
    /// key-derivation iterations on opening it: the integrity check's (MAC) count and every encryption's
    /// (scrypt: N·r·p), added up. Each count is read before its key is derived, and the data is refused with
    /// ``TLSError/Code/iterationLimitExceeded`` before the sum would pass the limit, so a file with a count of
    /// 2³¹ costs nothing to refuse where it would cost minutes of CPU to open. 0 (or less) opens only data
    /// with neither a MAC nor encryption.
    ///
    /// ```swift
    /// // A file from a tool that derives its keys with 2,000,000 PBKDF2 iterations (3 counts):
    /// let identity = try TLSIdentity(pkcs12: data, password: password, iterationLimit: 6_000_000)
    /// ```
    ///
    /// - Throws: ``TLSError``, as ``init(pkcs12:password:)``.
    public convenience init(pkcs12: Data, password: String, iterationLimit: Int) throws(TLSError) {
        let (key, certificates) = try PKCS12Reader.shared.open(
            pkcs12, password: password, iterationLimit: UInt64(clamping: iterationLimit))
        try self.init(certificates: certificates, privateKey: key)
    }

    /// The key-derivation iterations ``init(pkcs12:password:)`` spends at most on opening one PKCS#12 file,
    /// its counts added up: 1,000,000. Tools write about 6,000 to 42,000 in all (OpenSSL 3: 2,048 for each of
    /// the MAC, the certificates and the key; Java's keytool 10,000 each; Windows 2,000; Python's
    /// `cryptography` 20,000 for each encryption and 2,048 for the MAC), so this leaves twentyfold room above
    /// the largest, while one hostile file costs at most about a second of one core (a million PBKDF2-HMAC
    /// iterations take 0.3 to 0.6 s).
    public static let defaultPKCS12IterationLimit = 1_000_000

    /// Identity: two loads of the same files are different objects.
    public static func == (lhs: TLSIdentity, rhs: TLSIdentity) -> Bool { lhs === rhs }

    /// Hashes the identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension Optional where Wrapped == String {
    func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let self else { return body(nil) }
        return self.withCString(body)
    }
}
