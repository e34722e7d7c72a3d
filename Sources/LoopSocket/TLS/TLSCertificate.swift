import COpenSSL
import FoundationEssentials

/// An X.509 certificate, loaded from PEM or DER. Immutable and shareable between threads.
///
/// On Linux it stands where GCDAsyncSocket's users hold a `SecCertificate`: as a trust root
/// (``TLSConfiguration/trustRoots``), as an extra chain certificate after the identity in
/// `kCFStreamSSLCertificates`, and in a ``TLSTrust``'s peer chain.
public final class TLSCertificate: @unchecked Sendable, Hashable, CustomStringConvertible {
    // Thread-safety: the X509 is never mutated after loading; OpenSSL's reference counting is atomic.
    let x509: OpaquePointer

    /// Takes over one reference to `x509`.
    init(owning x509: OpaquePointer) {
        self.x509 = x509
    }

    deinit {
        X509_free(x509)
    }

    /// Every certificate in PEM text (a chain file holds several), in file order.
    ///
    /// - Throws: ``TLSError`` (`badConfiguration`) if no certificate can be read.
    public static func certificates(pem: Data) throws(TLSError) -> [TLSCertificate] {
        var result: [TLSCertificate] = []
        try withMemoryBIO(pem) { bio throws(TLSError) in
            while let x509 = PEM_read_bio_X509(bio, nil, nil, nil) {
                result.append(TLSCertificate(owning: x509))
            }
            ERR_clear_error()  // the end of the text reads as "no start line"
        }
        guard !result.isEmpty else { throw TLSError(.badConfiguration, "No PEM certificate found") }
        return result
    }

    /// Every certificate in the PEM file at `path`.
    public static func certificates(pemFile path: String) throws(TLSError) -> [TLSCertificate] {
        try certificates(pem: readFile(path))
    }

    /// One certificate from DER bytes.
    public convenience init(der: Data) throws(TLSError) {
        let x509 = der.withUnsafeBytes { raw -> OpaquePointer? in
            var pointer = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return d2i_X509(nil, &pointer, raw.count)
        }
        guard let x509 else { throw TLSError.fromQueue(.badConfiguration, "Not a DER certificate") }
        self.init(owning: x509)
    }

    /// The certificate's DER encoding.
    public var derBytes: Data {
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(x509, &out)
        guard length > 0, let out else { return Data() }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Data(bytes: out, count: Int(length))
    }

    /// The subject as one line (`CN=localhost, O=Test`).
    public var subject: String { Self.name(X509_get_subject_name(x509)) }

    /// The issuer as one line.
    public var issuer: String { Self.name(X509_get_issuer_name(x509)) }

    /// The subject, for logs.
    public var description: String { "TLSCertificate(\(subject))" }

    /// Identity: two loads of the same file are different objects.
    public static func == (lhs: TLSCertificate, rhs: TLSCertificate) -> Bool { lhs === rhs }

    /// Hashes the identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    private static func name(_ name: OpaquePointer?) -> String {
        guard let name, let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        X509_NAME_print_ex(bio, name, 0, LSOCK_XN_FLAG_RFC2253)
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard length > 0, let pointer else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }
}

/// Runs `body` with a read-only memory BIO over `data`.
func withMemoryBIO<R>(_ data: Data, _ body: (OpaquePointer) throws(TLSError) -> R) throws(TLSError) -> R {
    let result: Result<R, TLSError> = data.withUnsafeBytes { raw in
        guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
            return .failure(TLSError(.badConfiguration, "Out of memory"))
        }
        defer { BIO_free(bio) }
        do throws(TLSError) {
            return .success(try body(bio))
        } catch {
            return .failure(error)
        }
    }
    return try result.get()
}

/// The whole file, or a configuration error naming it.
func readFile(_ path: String) throws(TLSError) -> Data {
    guard let data = FileManager.default.contents(atPath: path) else {
        throw TLSError(.badConfiguration, "Cannot read \(path)")
    }
    return data
}
