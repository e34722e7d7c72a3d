import COpenSSL
import FoundationEssentials

/// Opens PKCS#12 data (`.p12`, `.pfx`) in an OpenSSL library context of its own, with OpenSSL's legacy
/// provider loaded beside the default one.
///
/// Apple's tools and OpenSSL 1.x encrypt a `.p12`'s certificates with `pbeWithSHA1And40BitRC2-CBC` (its key
/// with 3DES), and OpenSSL 3 keeps RC2 in its legacy provider, which its default context does not load. Loading
/// it into the default context would offer RC2 to everything in the process, TLS included; this context is used
/// to decrypt PKCS#12 contents and for nothing else. The key and certificates come out decoded in the default
/// context, so the identity made of them has no tie to this one.
final class PKCS12Reader: @unchecked Sendable {
    // Thread-safety: immutable after init; an OpenSSL library context whose providers are loaded may be used
    // by several threads at once.

    /// The reader ``TLSIdentity/init(pkcs12:password:)`` uses: made on first use, once, thread-safely (a
    /// static `let`), and kept for the life of the process.
    static let shared = PKCS12Reader(modulesDirectory: nil)

    /// The library context; nil if not even OpenSSL's default provider could be loaded into it.
    private let context: OpaquePointer?
    /// OpenSSL's reason why the legacy provider did not load (its module is missing), or nil if it did.
    let legacyProviderFailure: String?

    /// A reader whose context looks for OpenSSL's provider modules (`legacy.so`) in `modulesDirectory`, or
    /// where OpenSSL looks (`OPENSSL_MODULES`, else its built-in directory) when it is nil.
    init(modulesDirectory: String?) {
        var legacy: Int32 = 0
        var failure = [CChar](repeating: 0, count: 512)
        context = modulesDirectory.withOptionalCString { lsock_pkcs12_context_new($0, &legacy, &failure, failure.count) }
        legacyProviderFailure = legacy == 1 ? nil : Self.text(failure)
    }

    deinit {
        OSSL_LIB_CTX_free(context)
    }

    /// The private key (owned by the caller) and the certificates, the one matching the key first, then the
    /// others in the order the data has them.
    ///
    /// - Throws: ``TLSError`` with ``TLSError/Code/wrongPassword``, ``TLSError/Code/unsupportedAlgorithm``
    ///   (naming the algorithm, and saying so when OpenSSL's legacy provider is missing) or
    ///   ``TLSError/Code/malformedData``, ``TLSError/Code/iterationLimitExceeded`` when opening it would take
    ///   more than `iterationLimit` key-derivation iterations in all; ``TLSError/Code/badConfiguration`` when
    ///   the data holds no key or no certificate for it.
    func open(
        _ data: Data, password: String, iterationLimit: UInt64 = UInt64(TLSIdentity.defaultPKCS12IterationLimit)
    ) throws(TLSError) -> (key: OpaquePointer, certificates: [TLSCertificate]) {
        guard let context else {
            throw TLSError(.badConfiguration, "Cannot make OpenSSL's library context for PKCS#12")
        }
        var key: OpaquePointer?
        var leaf: OpaquePointer?
        var others: OpaquePointer?
        var error: UInt = 0
        var detail = [CChar](repeating: 0, count: 512)
        let status = data.withUnsafeBytes { raw in
            lsock_pkcs12_open(
                context, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count, password, iterationLimit,
                &key, &leaf, &others, &error, &detail, detail.count)
        }
        guard status == LSOCK_PKCS12_OK else {
            throw failure(Int(status), detail: Self.text(detail), openSSLError: error)
        }
        var certificates = leaf.map { [TLSCertificate(owning: $0)] } ?? []
        for i in 0..<lsock_chain_count(others) {
            if let cert = lsock_chain_at(others, i), X509_up_ref(cert) == 1 { certificates.append(TLSCertificate(owning: cert)) }
        }
        lsock_chain_free(others)
        guard let key else { throw TLSError(.badConfiguration, "The PKCS#12 data holds no private key") }
        guard leaf != nil else {
            EVP_PKEY_free(key)
            throw TLSError(.badConfiguration, "The PKCS#12 data holds no certificate for its private key")
        }
        return (key, certificates)
    }

    /// The error for a failed `lsock_pkcs12_open`.
    private func failure(_ status: Int, detail: String, openSSLError: UInt) -> TLSError {
        switch status {
        case Int(LSOCK_PKCS12_WRONG_PASSWORD):
            return TLSError(.wrongPassword, "Wrong password for the PKCS#12 data: \(detail)", openSSLError: openSSLError)
        case Int(LSOCK_PKCS12_UNSUPPORTED):
            var reason = "Cannot open the PKCS#12 data: \(detail)"
            if let legacyProviderFailure {
                reason += "; OpenSSL's legacy provider (RC2, single DES) could not be loaded: \(legacyProviderFailure)."
                    + " Debian and Ubuntu ship it in libssl3, as ossl-modules/legacy.so"
            }
            return TLSError(.unsupportedAlgorithm, reason, openSSLError: openSSLError)
        case Int(LSOCK_PKCS12_TOO_MANY_ITERATIONS):
            return TLSError(.iterationLimitExceeded, "Refused to open the PKCS#12 data: \(detail)", openSSLError: openSSLError)
        default:
            let why = detail.isEmpty ? "" : ": \(detail)"
            return TLSError(
                .malformedData, "Not PKCS#12 data, or cut short or damaged\(why)", openSSLError: openSSLError)
        }
    }

    /// A NUL-terminated C string in a buffer.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
