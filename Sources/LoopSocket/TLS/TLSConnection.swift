import COpenSSL
import EpollLoop
import FoundationEssentials

/// One connection's TLS layer, between the socket engine and the kernel. Loop-confined.
///
/// OpenSSL reads ciphertext from the buffer the engine just `recv`ed into and writes ciphertext into an
/// output buffer that the engine `send`s (`COpenSSL`'s BIO): OpenSSL never touches the descriptor, every
/// byte crosses the engine's syscall seam, and nothing OpenSSL holds hides readiness from epoll (it keeps
/// at most an incomplete record, which needs more bytes from the kernel anyway). Ciphertext OpenSSL did not
/// take yet stays in ``stash``.
final class TLSConnection {
    let raw: UnsafeMutablePointer<lsock_tls>
    let context: TLSContext
    let isServer: Bool
    /// The name the client verifies and sends as SNI (nil on servers).
    let serverName: String?
    /// Where a client keeps its session for resumption; nil when it does not resume.
    let sessionKey: Data?
    // `@exclusivity(unchecked)`, as on GCDAsyncSocket: touched only on the socket's loop, one pump at a
    // time, and the dynamic checks cost more per record than the bookkeeping they guard.
    /// Ciphertext received but not yet taken by OpenSSL (rare: bytes that followed the handshake's last
    /// message in the same segment).
    @exclusivity(unchecked) var stash: [UInt8] = []
    /// Plaintext bytes (of the queued writes) whose ciphertext sits in the output buffer: their writes
    /// complete when it has all gone to the kernel.
    @exclusivity(unchecked) var encryptedPlaintext = 0
    @exclusivity(unchecked) var closeNotifyReceived = false
    @exclusivity(unchecked) var closeNotifySent = false
    @exclusivity(unchecked) var handshakeTimer = TimerID.invalid

    init(context: TLSContext, serverName: String?, sessionKey: Data?) throws(TLSError) {
        let isServer = context.configuration.role == .server
        guard let raw = lsock_tls_new(context.ctx, isServer ? 1 : 0) else {
            throw TLSError.fromQueue(.badConfiguration, "Cannot create a TLS connection")
        }
        self.raw = raw
        self.context = context
        self.isServer = isServer
        self.serverName = serverName
        self.sessionKey = sessionKey
        if context.configuration.manualTrustEvaluation { raw.pointee.trust = Int32(LSOCK_TRUST_ASK) }
        guard !isServer else { return }
        if let serverName {
            let verifies = context.configuration.certificateVerification == .fullVerification
                && !context.configuration.manualTrustEvaluation
            guard lsock_ssl_set_sni(raw.pointee.ssl, serverName) == 1,
                  !verifies || lsock_ssl_set_verify_host(raw.pointee.ssl, serverName) == 1
            else { throw TLSError.fromQueue(.badConfiguration, "Invalid server name \"\(serverName)\"") }
        }
        if let sessionKey, let session = context.session(for: sessionKey) {
            SSL_set_session(raw.pointee.ssl, session)
            SSL_SESSION_free(session)
        }
    }

    deinit {
        lsock_tls_free(raw)
    }

    var ssl: OpaquePointer { raw.pointee.ssl }

    /// Ciphertext waits to be sent.
    var hasOutput: Bool { raw.pointee.out_len > raw.pointee.out_sent }

    /// OpenSSL has something to read: input given to ``withInput(_:_:)`` that it has not taken, or bytes it
    /// holds (a record read but not returned). Without either, `SSL_read` could only answer WANT_READ, and
    /// would first allocate its 17 KB read buffer (which `SSL_MODE_RELEASE_BUFFERS` frees only after a record)
    /// and keep it while the connection idles.
    var hasInput: Bool { raw.pointee.in_len > 0 || SSL_has_pending(ssl) == 1 }

    /// The unsent ciphertext.
    var output: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: raw.pointee.out! + raw.pointee.out_sent, count: raw.pointee.out_len - raw.pointee.out_sent)
    }

    /// `count` bytes of the output went to the kernel; the buffer is freed once all of it has.
    func outputSent(_ count: Int) {
        lsock_tls_output_consumed(raw, count)
    }

    /// Runs `body` with OpenSSL reading from the stash followed by `bytes`; what it leaves is stashed.
    func withInput<R>(_ bytes: UnsafeRawBufferPointer?, _ body: () -> R) -> R {
        if stash.isEmpty, let bytes {
            raw.pointee.in = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
            raw.pointee.in_len = bytes.count
            let result = body()
            if raw.pointee.in_len > 0 {
                stash.append(contentsOf: UnsafeRawBufferPointer(start: raw.pointee.in, count: raw.pointee.in_len))
            }
            raw.pointee.in = nil
            raw.pointee.in_len = 0
            return result
        }
        if let bytes { stash.append(contentsOf: bytes) }
        var input = stash
        stash = []
        let (result, left) = input.withUnsafeBytes { all -> (R, Int) in
            raw.pointee.in = all.baseAddress?.assumingMemoryBound(to: UInt8.self)
            raw.pointee.in_len = all.count
            let result = body()
            let left = raw.pointee.in_len
            raw.pointee.in = nil
            raw.pointee.in_len = 0
            return (result, left)
        }
        if left > 0 {
            input.removeFirst(input.count - left)
            stash = input + stash
        }
        return result
    }

    /// What one step of the handshake did.
    enum HandshakeStep {
        case done
        case needsInput
        case needsTrust
        case failed(TLSError)
    }

    /// One `SSL_do_handshake` over the input given to ``withInput(_:_:)``.
    func handshake() -> HandshakeStep {
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .done }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .needsInput
        case SSL_ERROR_WANT_RETRY_VERIFY:
            return .needsTrust
        default:
            return .failed(handshakeError())
        }
    }

    /// Why the handshake failed: the verification result when the peer's certificate was refused, else
    /// OpenSSL's reason.
    func handshakeError() -> TLSError {
        if raw.pointee.trust == LSOCK_TRUST_REJECTED {
            ERR_clear_error()
            return TLSError(.trustRejected, "The delegate did not trust the peer's certificate")
        }
        let verify = SSL_get_verify_result(ssl)
        let error = TLSError.fromQueue(.handshakeFailed, "TLS handshake failed")
        if verify != X509_V_OK && lsock_error_reason(error.openSSLError) == SSL_R_CERTIFICATE_VERIFY_FAILED {
            return .verification(verify)
        }
        return error
    }

    /// The peer's chain, leaf first.
    var peerCertificates: [TLSCertificate] {
        var result: [TLSCertificate] = []
        let chain = SSL_get_peer_cert_chain(ssl)
        // A server's view of the chain leaves out the client's own certificate; a client's includes it.
        if isServer, let leaf = SSL_get0_peer_certificate(ssl), X509_up_ref(leaf) == 1 {
            result.append(TLSCertificate(owning: leaf))
        }
        for i in 0..<lsock_chain_count(chain) {
            if let cert = lsock_chain_at(chain, i), X509_up_ref(cert) == 1 { result.append(TLSCertificate(owning: cert)) }
        }
        return result
    }

    /// The delegate's trust decision, for the next handshake step (clients) or at once (servers).
    func decideTrust(_ trusted: Bool) {
        raw.pointee.trust = Int32(trusted ? LSOCK_TRUST_ACCEPTED : LSOCK_TRUST_REJECTED)
    }

    /// Manual trust whose question was not asked during the handshake: always on servers (whose chain, if
    /// any, waits in `LSOCK_TRUST_PENDING`), and on clients when the handshake resumed a session (OpenSSL runs
    /// no verification then).
    var awaitsTrustDecision: Bool { raw.pointee.trust == LSOCK_TRUST_ASK || raw.pointee.trust == LSOCK_TRUST_PENDING }

    /// `SSL_do_handshake` has completed (the delegate is asked after it, not during it).
    var handshakeFinished: Bool { SSL_is_init_finished(ssl) == 1 }

    /// Drops the session kept under this connection's key.
    func forgetSession() {
        if let sessionKey { context.removeSession(for: sessionKey) }
    }

    /// Keeps a session the client received (after the handshake in TLS 1.2, in a later ticket in 1.3).
    func keepNewSession() {
        guard let session = lsock_tls_take_session(raw) else { return }
        guard let sessionKey else {
            SSL_SESSION_free(session)
            return
        }
        context.store(session, for: sessionKey)
    }

    /// Queues a close_notify into the output (once). Only for an established session (the caller's state
    /// says so).
    func shutdown() {
        guard !closeNotifySent else { return }
        closeNotifySent = true
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// What the handshake negotiated.
    var info: TLSConnectionInfo {
        let alpn = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer -> String? in
            let length = Int(lsock_ssl_alpn(ssl, buffer.baseAddress, Int32(buffer.count)))
            guard length > 0 else { return nil }
            return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress, count: length), as: UTF8.self)
        }
        let version = TLSVersion(rawValue: Int(SSL_version(ssl))) ?? .v1_2
        return TLSConnectionInfo(
            version: version,
            cipher: SSL_get_current_cipher(ssl).map(Self.cipherName) ?? "",
            alpn: alpn,
            serverName: isServer ? lsock_ssl_server_name(ssl).map { String(cString: $0) } : serverName,
            sessionResumed: SSL_session_reused(ssl) == 1,
            peerCertificates: peerCertificates)
    }

    /// OpenSSL's name of a cipher suite, one `String` per suite for the process: every connection's info
    /// shares it, where a name made per connection is a heap allocation each (the names are longer than
    /// the 15 bytes a `String` holds inline). `SSL_CIPHER`s are OpenSSL's static tables, so their
    /// addresses are the keys.
    private static func cipherName(_ cipher: OpaquePointer) -> String {
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(cipher)))
        if let name = cipherNames.withLock({ $0[key] }) { return name }
        let name = SSL_CIPHER_get_name(cipher).map { String(cString: $0) } ?? ""
        cipherNames.withLock { $0[key] = name }
        return name
    }

    private static let cipherNames = Locked<[UInt: String]>([:])
}

/// What a TLS handshake negotiated, readable once a socket is secure (``GCDAsyncSocket/tlsInfo``).
public struct TLSConnectionInfo: Sendable, Hashable {
    /// The protocol version.
    public let version: TLSVersion
    /// OpenSSL's name of the cipher suite (`TLS_AES_128_GCM_SHA256`, `ECDHE-ECDSA-AES128-GCM-SHA256`).
    public let cipher: String
    /// The application protocol chosen by ALPN, if any.
    public let alpn: String?
    /// The server name: the one a client asked for (SNI), on either side.
    public let serverName: String?
    /// Whether the handshake resumed an earlier session.
    public let sessionResumed: Bool
    /// The peer's certificates, leaf first (empty when it sent none).
    public let peerCertificates: [TLSCertificate]
}
