import COpenSSL
import EpollLoop
import FoundationEssentials

/// One `SSL_CTX` built from a ``TLSConfiguration``, shared by every connection with the same settings (so
/// they share the server's session cache and ticket keys, the loaded trust store, and the client's sessions
/// for resumption). Immutable once built, as OpenSSL requires of a context in use by several threads.
///
/// A resumed handshake runs no certificate verification, so whatever decides trust must keep sessions
/// apart. The context key holds the trust roots, the verification mode, manual evaluation and the
/// identity: a session made under other settings lives in another context and is never offered. The session
/// key within a context (``sessionKey(name:port:peerID:)``) holds the rest: the server name verified, the
/// port and the app's peer ID.
final class TLSContext: @unchecked Sendable {
    // Thread-safety: `ctx` is configured in `init` only; `sessions` is behind its lock.
    let ctx: OpaquePointer
    let configuration: TLSConfiguration
    /// Client sessions for resumption, by session key; each holds one `SSL_SESSION` reference.
    private let sessions = Locked<[Data: OpaquePointer]>([:])
    private static let maxSessions = 4096

    /// The shared context for `configuration`'s settings, built on first use, and built again when its
    /// trust roots file has changed since (``TrustFileIdentity``).
    static func shared(for configuration: TLSConfiguration) throws(TLSError) -> TLSContext {
        let key = CacheKey(configuration.contextKey)
        if let context = cache.withLock({ $0[key] }) { return context }
        let context = try TLSContext(configuration: key.configuration)
        return cache.withLock { cache in
            if let raced = cache[key] { return raced }
            // Settings that change per connection (a fresh identity object each time) must not grow the
            // cache without bound; contexts still in use live on in their connections. A context from an
            // earlier version of the trust file is dropped at once (no lookup finds it again).
            if cache.count >= 64 { cache.removeAll() }
            if key.trustFile != nil { cache = cache.filter { $0.key.configuration != key.configuration } }
            cache[key] = context
            return context
        }
    }

    private static let cache = Locked<[CacheKey: TLSContext]>([:])

    init(configuration: TLSConfiguration) throws(TLSError) {
        let isServer = configuration.role == .server
        guard let ctx = lsock_ctx_new(isServer ? 1 : 0) else {
            throw TLSError.fromQueue(.badConfiguration, "Cannot create an OpenSSL context")
        }
        self.ctx = ctx
        self.configuration = configuration
        if !configuration.releasesIdleBuffers {
            SSL_CTX_ctrl(ctx, SSL_CTRL_CLEAR_MODE, Int(SSL_MODE_RELEASE_BUFFERS), nil)  // SSL_CTX_clear_mode
        }
        try configure(isServer: isServer)
    }

    deinit {
        SSL_CTX_free(ctx)
        for session in sessions.withLock({ Array($0.values) }) { SSL_SESSION_free(session) }
    }

    private func configure(isServer: Bool) throws(TLSError) {
        let c = configuration
        guard c.minimumVersion <= c.maximumVersion,
              lsock_ctx_set_versions(ctx, Int32(c.minimumVersion.rawValue), Int32(c.maximumVersion.rawValue)) == 1
        else { throw TLSError(.badConfiguration, "Invalid TLS version range \(c.minimumVersion.name)-\(c.maximumVersion.name)") }
        if let list = c.cipherList, SSL_CTX_set_cipher_list(ctx, list) != 1 {
            throw TLSError.fromQueue(.badConfiguration, "No usable cipher in \"\(list)\"")
        }
        if let suites = c.cipherSuites, SSL_CTX_set_ciphersuites(ctx, suites) != 1 {
            throw TLSError.fromQueue(.badConfiguration, "No usable cipher suite in \"\(suites)\"")
        }
        if let identity = c.identity {
            try use(identity)
        } else if isServer {
            throw TLSError(.badConfiguration, "A TLS server needs an identity (kCFStreamSSLCertificates)")
        }
        try loadTrustRoots()
        if let identity = c.identity, identity.certificates.count == 1, c.extraChainCertificates.isEmpty {
            // A leaf without a chain: build once what OpenSSL would otherwise build at every handshake.
            _ = lsock_ctx_build_chain(ctx)
        }
        try configureVerification(isServer: isServer)
        try configureALPN(isServer: isServer)
        if isServer {
            guard c.sessionTickets >= 0 else { throw TLSError(.badConfiguration, "Invalid sessionTickets \(c.sessionTickets)") }
            let sid = Array("loopsocket".utf8)
            lsock_ctx_set_server_session_cache(ctx, c.sessionResumption ? 1 : 0, c.sessionTickets, sid, UInt32(sid.count))
            try configureServerNames()
        }
    }

    private func use(_ identity: TLSIdentity) throws(TLSError) {
        guard SSL_CTX_use_certificate(ctx, identity.certificates[0].x509) == 1,
              SSL_CTX_use_PrivateKey(ctx, identity.privateKey) == 1
        else { throw TLSError.fromQueue(.badConfiguration, "Cannot use the identity") }
        for certificate in identity.certificates.dropFirst() + configuration.extraChainCertificates where lsock_ctx_add_chain_cert(ctx, certificate.x509) != 1 {
            throw TLSError.fromQueue(.badConfiguration, "Cannot add \(certificate.subject) to the chain")
        }
    }

    private func loadTrustRoots() throws(TLSError) {
        let c = configuration
        let verifies = c.manualTrustEvaluation || c.certificateVerification != .none
        let asksClients = c.role == .server && c.clientAuthentication != .none
        guard verifies && (c.role == .client || asksClients || c.manualTrustEvaluation) else { return }
        try c.trustRoots.load(into: SSL_CTX_get_cert_store(ctx))
    }

    private func configureVerification(isServer: Bool) throws(TLSError) {
        let c = configuration
        var mode: Int32 = SSL_VERIFY_NONE
        if isServer {
            // Manual trust or not, a server asks clients for a certificate, and demands one, only as told.
            switch c.clientAuthentication {
            case .none: break
            case .optional: mode = SSL_VERIFY_PEER
            case .required: mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
            }
            if !c.manualTrustEvaluation && c.certificateVerification == .none && mode != SSL_VERIFY_NONE {
                throw TLSError(.badConfiguration, "Asking clients for certificates that are not verified: use manualTrustEvaluation")
            }
        } else if c.manualTrustEvaluation || c.certificateVerification != .none {
            mode = SSL_VERIFY_PEER
        }
        if c.manualTrustEvaluation {
            lsock_ctx_set_manual_trust(ctx, mode)
        } else {
            SSL_CTX_set_verify(ctx, mode, nil)
        }
    }

    private func configureALPN(isServer: Bool) throws(TLSError) {
        guard !configuration.alpn.isEmpty else { return }
        var wire: [UInt8] = []
        for name in configuration.alpn {
            let bytes = Array(name.utf8)
            guard !bytes.isEmpty, bytes.count < 256 else { throw TLSError(.badConfiguration, "Invalid ALPN name \"\(name)\"") }
            wire.append(UInt8(bytes.count))
            wire += bytes
        }
        let ok = isServer
            ? lsock_ctx_set_alpn_server(ctx, wire, wire.count) == 1
            : SSL_CTX_set_alpn_protos(ctx, wire, UInt32(wire.count)) == 0  // 0 is success here
        guard ok else { throw TLSError.fromQueue(.badConfiguration, "Cannot set ALPN") }
    }

    /// One context per extra server name, differing only in its identity; the server name callback
    /// switches a connection to it.
    private func configureServerNames() throws(TLSError) {
        guard !configuration.serverNameIdentities.isEmpty else { return }
        var names: [String] = []
        var contexts: [TLSContext] = []
        for (name, identity) in configuration.serverNameIdentities.sorted(by: { $0.key < $1.key }) {
            var sub = configuration
            sub.identity = identity
            sub.serverNameIdentities = [:]
            names.append(name)
            contexts.append(try TLSContext(configuration: sub))
        }
        let cNames = names.map { strdup($0) }
        defer { cNames.forEach { free($0) } }
        let pointers = cNames.map { UnsafePointer($0) }
        let ctxs: [OpaquePointer?] = contexts.map { $0.ctx }
        guard lsock_ctx_set_sni(ctx, pointers, ctxs, Int32(names.count)) == 1 else {
            throw TLSError(.badConfiguration, "Cannot set the server names")
        }
    }

    // MARK: Client sessions

    /// Where a client's session is kept: its peer ID (GCDAsyncSocket's `GCDAsyncSocketSSLPeerID`) narrows
    /// the server name and port, never replaces them, so a session verified for one name is not offered to
    /// another. The name's length comes first, so no two triples encode alike.
    static func sessionKey(name: String, port: UInt16, peerID: Data?) -> Data {
        var key = Data("\(name.utf8.count):\(name):\(port):".utf8)
        if let peerID { key.append(peerID) }
        return key
    }

    /// A reference to the session kept under `key` (the caller frees it), or nil.
    func session(for key: Data) -> OpaquePointer? {
        sessions.withLock { sessions in
            guard let session = sessions[key] else { return nil }
            SSL_SESSION_up_ref(session)
            return session
        }
    }

    /// Forgets the session kept under `key`: the delegate refused the peer it resumed with.
    func removeSession(for key: Data) {
        sessions.withLock { $0.removeValue(forKey: key) }.map { SSL_SESSION_free($0) }
    }

    /// Keeps `session` (taking its reference) under `key`, replacing the one before.
    func store(_ session: OpaquePointer, for key: Data) {
        let replaced = sessions.withLock { sessions -> [OpaquePointer] in
            var dropped: [OpaquePointer] = []
            if sessions.count >= Self.maxSessions, sessions[key] == nil {
                dropped = Array(sessions.values)
                sessions.removeAll()
            }
            if let old = sessions.updateValue(session, forKey: key) { dropped.append(old) }
            return dropped
        }
        replaced.forEach { SSL_SESSION_free($0) }
    }
}

extension TLSConfiguration.TrustRoots {
    /// Adds these roots to `store`: the context's, or the one a ``TLSTrust`` builds for its anchors.
    func load(into store: OpaquePointer?) throws(TLSError) {
        switch self {
        case .system:
            guard X509_STORE_set_default_paths(store) == 1 else {
                throw TLSError.fromQueue(.badConfiguration, "Cannot load the system's trust store")
            }
        case .file(let path):
            guard X509_STORE_load_file(store, path) == 1 else {
                throw TLSError.fromQueue(.badConfiguration, "Cannot load trust roots from \(path)")
            }
        case .certificates(let roots):
            for root in roots where X509_STORE_add_cert(store, root.x509) != 1 {
                throw TLSError.fromQueue(.badConfiguration, "Cannot trust \(root.subject)")
            }
        }
    }
}

extension TLSConfiguration {
    /// Builds the OpenSSL context for these settings now (it is kept for the connections that use them), so
    /// that a bad certificate, key, trust file or cipher list is reported at start-up rather than at the
    /// first handshake.
    /// - Throws: ``TLSError`` with ``TLSError/Code/badConfiguration`` and OpenSSL's reason.
    public func validate() throws(TLSError) {
        _ = try TLSContext.shared(for: self)
    }
}
