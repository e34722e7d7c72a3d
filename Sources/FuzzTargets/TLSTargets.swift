import COpenSSL
import FoundationEssentials
import LoopSocket

/// The certificate and key loaders (TLSCertificate, TLSIdentity), which read files a user points the library
/// at: PEM chains, DER, PEM keys.
///
/// Input: byte 0 picks the loader (0: a PEM chain, 1: DER, 2: an identity from a PEM chain and a PEM key, the
/// two split at bytes 1-2, with no password or with the test password); the rest is the data. Properties: every
/// certificate read writes back DER that reads again to the same DER; an identity has its leaf first; the
/// thread's OpenSSL error queue is empty afterwards, failure or not (errors left there pile up in a loop thread
/// that lives as long as the process, and mislead the next caller); nothing leaks (LeakSanitizer, in the fuzz
/// build) whatever fails halfway.
enum TLSPEMTarget {
    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        ERR_clear_error()
        try load(data)
        try checkErrorQueueEmpty()
    }

    /// Fails when an OpenSSL error was left in this thread's queue.
    static func checkErrorQueueEmpty() throws(PropertyFailure) {
        let left = ERR_peek_error()
        ERR_clear_error()
        let reason = ERR_reason_error_string(left).map { String(cString: $0) } ?? "?"
        try check(left == 0, "an OpenSSL error left in the queue: \(reason)")
    }

    static func load(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        var input = FuzzInput(data)
        let selector = Int(input.byte())
        let split = input.uint16()
        let bytes = Data(input.rest)
        switch selector % 3 {
        case 0:
            guard let chain = try? TLSCertificate.certificates(pem: bytes) else { return }
            try check(!chain.isEmpty, "an empty chain read without an error")
            for certificate in chain { try checkRoundTrip(certificate) }
        case 1:
            guard let certificate = try? TLSCertificate(der: bytes) else { return }
            try checkRoundTrip(certificate)
        default:
            let cut = split % (bytes.count + 1)
            let password = selector & 0x80 != 0 ? "test-password" : nil
            // No password for an encrypted key: OpenSSL must not be left to ask for one.
            guard let identity = try? TLSIdentity(certificateChainPEM: bytes.prefix(cut),
                                                  privateKeyPEM: bytes.dropFirst(cut),
                                                  password: password) else { return }
            try check(!identity.certificates.isEmpty, "an identity without a certificate")
            for certificate in identity.certificates { try checkRoundTrip(certificate) }
        }
    }

    static func checkRoundTrip(_ certificate: TLSCertificate) throws(PropertyFailure) {
        let der = certificate.derBytes
        try check(!der.isEmpty, "a certificate without DER")
        guard let again = try? TLSCertificate(der: der) else {
            throw PropertyFailure("a certificate's own DER does not read back")
        }
        try check(again.derBytes == der, "DER written, read and written again differs")
        _ = certificate.subject + certificate.issuer + certificate.description
    }
}

/// The PKCS#12 loader, `TLSIdentity(pkcs12:password:)` (PKCS12Reader and its C helper).
///
/// Input: byte 0 picks the password (the test certificates', empty, or another); the rest is the `.p12` data.
/// Properties: an identity read has a certificate, the leaf first, and its certificates write back DER that
/// reads again; a failure is a typed error; the OpenSSL error queue is empty afterwards; nothing leaks
/// (LeakSanitizer, in the fuzz build).
enum TLSPKCS12Target {
    static let passwords = ["test-password", "", "wrong"]

    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        var input = FuzzInput(data)
        let password = passwords[Int(input.byte()) % passwords.count]
        ERR_clear_error()
        defer { ERR_clear_error() }
        let identity: TLSIdentity
        do {
            identity = try TLSIdentity(pkcs12: Data(input.rest), password: password)
        } catch {
            try check(!error.description.isEmpty, "an error without a reason")
            try TLSPEMTarget.checkErrorQueueEmpty()
            return
        }
        try TLSPEMTarget.checkErrorQueueEmpty()
        try check(!identity.certificates.isEmpty, "an identity without a certificate")
        for certificate in identity.certificates { try TLSPEMTarget.checkRoundTrip(certificate) }
    }
}
