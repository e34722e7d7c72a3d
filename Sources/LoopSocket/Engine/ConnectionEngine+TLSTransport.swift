import CEpollShim
import COpenSSL
import EpollLoop
import FoundationEssentials
import Glibc

/// The TLS transport: the state's TLS phase (``TLSPhase``) moved by its events (`startTLS` queued, both
/// queues at its marker, trust asked and answered, the handshake done), the handshake, trust, and
/// application data through OpenSSL over the socket's own buffers.
extension ConnectionEngine {
    /// Accepted while a connection is being made or is open, once, and not after a `disconnectAfter…`
    /// (GCDAsyncSocket's rules; other calls are ignored, as there: the transition says which).
    func queueStartTLS(_ start: TLSStart) {
        let box = UncheckedSendable(start)
        onLoop { [self] in
            guard case .queueTLSMarkers(let pump) = connectionState.handle(.tlsAsked) else { return }
            reads.append(ReadOp(kind: .startTLS(box.value), maxLength: 0, tag: 0, timeout: -1, id: reserveOpID()))
            writes.append(WriteOp(data: Data(), count: 0, tag: 0, timeout: -1, id: reserveOpID()))
            readiness.remove(.idleWake)
            if pump { requestPump() }
        }
    }

    /// Starts the handshake if both queues have reached `startTLS`'s marker.
    func beginTLSIfBothQueuesReady() {
        guard reads.front({ $0.isStartTLS }) == true, writes.front({ $0.isStartTLS }) == true,
              case .startHandshake = connectionState.handle(.tlsMarkersReached) else { return }
        let marker = reads.removeFirst()
        writes.removeFirst()
        // The markers grew the queues for one operation each: an idle TLS connection keeps only what it uses
        // (its one read back in the socket's inline slot).
        reads.shrinkToFit(inlineSlot: inlineReadSlot)
        writes.shrinkToFit()
        guard case .startTLS(let start) = marker.kind else { return }
        let connection: TLSConnection
        let configuration: TLSConfiguration
        do {
            configuration = try start.configuration.get()
            connection = try makeTLSConnection(configuration)
        } catch {
            closeWithError(ConnectionError(passingThrough: error))
            return
        }
        // Bytes that arrived behind the plaintext the reads took are the peer's first handshake bytes.
        if pendingCount > 0 {
            connection.stash = Array(pending[pendingStart...])
            pending = []
            pendingStart = 0
        }
        tlsLayer = connection
        // The timeout is per connection: the shared context's copy of the settings leaves it out.
        let timeout = configuration.handshakeTimeout
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        connection.handshakeTimer = scheduleIfStillCurrent(at: Self.deadline(after: seconds)) { [self] in
            guard connectionState.tlsHoldsData, let tls = tlsLayer else { return }
            tls.handshakeTimer = .invalid
            closeWithError(ConnectionError(passingThrough: TLSError.handshakeTimedOut))
        }
        requestPump()
    }

    private func makeTLSConnection(_ configuration: TLSConfiguration) throws -> TLSConnection {
        let context = try TLSContext.shared(for: configuration)
        guard configuration.role == .client else {
            return try TLSConnection(context: context, serverName: nil, sessionKey: nil)
        }
        let peer = connected(peer: true)
        guard let name = configuration.serverName ?? config.connectHost ?? peer?.host else {
            throw TLSError(.badConfiguration, "No server name to verify: set kCFStreamSSLPeerName (serverName)")
        }
        // Resumption only when asked for (as GCDAsyncSocket's `GCDAsyncSocketSSLPeerID`).
        let key = configuration.resumesSessions
            ? TLSContext.sessionKey(name: name, port: peer?.port ?? 0, peerID: configuration.sessionKey) : nil
        return try TLSConnection(context: context, serverName: name, sessionKey: key)
    }

    // MARK: The handshake

    /// Runs the handshake as far as the bytes at hand allow: sends what OpenSSL wrote, reads what it needs.
    func advanceHandshake(_ tls: TLSConnection) {
        while isOpen && tlsPhase == .handshaking {
            guard flushTLSOutput(tls) else { return }
            let step = tls.withInput(nil, { tls.handshake() })
            switch step {
            case .done:
                guard flushTLSOutput(tls) else { return }
                // The sink was not asked during the handshake if OpenSSL could not pause it for the answer
                // (a server's), or verified no certificate (a resumed session, whose chain was trusted by
                // whichever connection made it): it is asked now, and no application data moves until it
                // answers.
                perform(connectionState.handle(.handshakeDone(awaitsTrust: tls.awaitsTrustDecision)), tls)
                return
            case .needsTrust:
                perform(connectionState.handle(.trustAsked), tls)
                return
            case .failed(let error):
                _ = flushTLSOutput(tls)  // the alert, if the kernel takes it
                closeWithError(ConnectionError(passingThrough: error))
                return
            case .needsInput:
                guard flushTLSOutput(tls), readiness.contains(.readable) else { return }
                guard receiveHandshakeBytes(tls) else { return }
            }
        }
    }

    /// One `recv` of handshake bytes into the stash; false when there was nothing (or the socket closed).
    private func receiveHandshakeBytes(_ tls: TLSConnection) -> Bool {
        let buffer = context.receiveBuffer
        switch receiveChunk(into: buffer) {
        case .nothing:
            return false
        case .endOfStream:
            closeWithError(ConnectionError(passingThrough: TLSError.closedInHandshake))
            return false
        case .bytes(let count):
            tls.stash.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            return true
        }
    }

    /// Does what a TLS event's transition says.
    private func perform(_ action: ConnectionState.Action, _ tls: TLSConnection) {
        switch action {
        case .askTrust:
            askSinkForTrust(tls)
        case .establish:
            establish(tls)
        case .pump:
            requestPump()
        case .rejectTrust:
            closeWithError(ConnectionError(passingThrough: TLSError(.trustRejected, "The delegate did not trust the peer's certificate")))
        default:
            break
        }
    }

    private func establish(_ tls: TLSConnection) {
        // Only a trusted connection keeps a session for the next one (TLS 1.2's; TLS 1.3 tickets come later).
        tls.keepNewSession()
        eventLoop.countSocket(CEPOLL_TLS_HANDSHAKES)
        eventLoop.cancelOnLoop(tls.handshakeTimer)
        tls.handshakeTimer = .invalid
        let info = tls.info
        withSharedState { $0.tls = info }
        sinkReport(.secured)
        requestPump()
    }

    /// Hands the peer's chain to the sink; the handshake (or, on a server, the data) waits for its answer,
    /// within the handshake timeout. The completion handler may be called from any thread, once (later
    /// calls, and calls after the socket closed, do nothing).
    private func askSinkForTrust(_ tls: TLSConnection) {
        let trust = TLSTrust(certificates: tls.peerCertificates, hostName: tls.serverName, context: tls.context)
        let generation = config.generation
        let once = OneShot()
        let handler: @Sendable (Bool) -> Void = { [self] trusted in
            guard once.claim() else { return }
            onLoop(ifStill: generation) { [self] in
                guard tlsPhase == .awaitingTrust, let current = tlsLayer else { return }
                trustDecided(current, trusted)
            }
        }
        // A sink with nobody to ask calls `handler(false)`: not trusted.
        sinkReport(.trustAsked(trust, decide: handler))
    }

    private func trustDecided(_ tls: TLSConnection, _ trusted: Bool) {
        tls.decideTrust(trusted)
        // A session of a refused peer is not offered again: the next connection makes a full handshake.
        if !trusted { tls.forgetSession() }
        perform(connectionState.handle(.trustAnswered(trusted: trusted, handshakeFinished: tls.handshakeFinished)), tls)
    }

    // MARK: Application data

    /// `receive`'s TLS path: one `recv` of ciphertext (or the stash), decrypted record by record straight into
    /// the reads; what they do not take goes to the prebuffer, as in plaintext.
    func receiveTLS(_ tls: TLSConnection, intoPrebufferOnly: Bool) {
        var input: UnsafeRawBufferPointer?
        if tls.stash.isEmpty {
            let buffer = context.receiveBuffer
            switch receiveChunk(into: buffer) {
            case .nothing:
                return
            case .endOfStream:
                guard tls.closeNotifyReceived else {
                    closeWithError(ConnectionError(passingThrough: TLSError.cutWithoutNotify))
                    return
                }
                peerFinished()
                return
            case .bytes(let count):
                input = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            }
        }
        tls.withInput(input) { decrypt(tls, intoPrebufferOnly: intoPrebufferOnly) }
        // A ticket that came with this input is kept even if a read's callback closed the socket meanwhile
        // (a client that reads one reply and disconnects is the common case).
        if !tls.isServer { tls.keepNewSession() }
    }

    private func decrypt(_ tls: TLSConnection, intoPrebufferOnly: Bool) {
        let plaintext = context.tlsPlaintextBuffer
        // With SSL_MODE_RELEASE_BUFFERS alone, OpenSSL 3.0 keeps a record buffer (about 16 KiB) once a TLS 1.3
        // client has read the server's session tickets, and an idle client would hold it: what OpenSSL holds
        // once the input is decrypted is released here. SSL_free_buffers declines while part of a record
        // waits in the buffer, and costs a few checks when nothing is allocated.
        defer { if tls.context.configuration.releasesIdleBuffers { _ = SSL_free_buffers(tls.ssl) } }
        while isOpen && tls.hasInput {
            let count = Int(SSL_read(tls.ssl, plaintext.baseAddress, Int32(plaintext.count)))
            if count > 0 {
                let bytes = UnsafeRawBufferPointer(rebasing: plaintext[0..<count])
                let used = intoPrebufferOnly ? 0 : feed(bytes)
                if used < count && isOpen {
                    pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[used...]))
                }
                continue
            }
            switch SSL_get_error(tls.ssl, Int32(count)) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return
            case SSL_ERROR_ZERO_RETURN:
                // close_notify: the peer's clean end of stream.
                tls.closeNotifyReceived = true
                peerFinished()
                return
            default:
                let error = TLSError.fromQueue(.protocolError, "TLS record error")
                _ = flushTLSOutput(tls)  // the alert OpenSSL wrote (bad_record_mac, ...), if the kernel takes it
                closeWithError(ConnectionError(passingThrough: error))
                return
            }
        }
    }

    /// `writeLoop`'s TLS path: encrypts queued writes (up to ``tlsWriteBatch`` bytes at a time) into one
    /// buffer that leaves in as few `send`s as the kernel allows; the writes complete once their ciphertext
    /// has all gone to the kernel, so water marks and `didWriteDataWithTag` mean what they mean in plaintext.
    func writeLoopTLS(_ tls: TLSConnection) {
        while isOpen {
            guard flushTLSOutput(tls), !tls.hasOutput else { return }
            if tls.encryptedPlaintext > 0 {
                let count = tls.encryptedPlaintext
                tls.encryptedPlaintext = 0
                completeWrites(count)
                continue
            }
            guard tlsPhase == .established, !writes.isEmpty, !asking.contains(.write) else { break }
            guard let count = encryptQueuedWrites(tls) else { return }
            tls.encryptedPlaintext = count
        }
        guard isOpen, writes.isEmpty, writeSide != .open else { return }
        if !tls.closeNotifySent && tlsPhase == .established {
            tls.shutdown()
            guard flushTLSOutput(tls), !tls.hasOutput else { return }
        }
        shutDownWriteSideIfAsked()
    }

    /// Plaintext encrypted per pass: enough for several records per `send`, small enough that a connection
    /// whose peer does not read holds at most this much ciphertext beside its queued writes.
    static let tlsWriteBatch = 64 * 1024

    /// Encrypts the front writes' unwritten bytes, up to the batch size; nil if the connection failed.
    /// `SSL_write` in partial-write mode may take less than asked (a record at a time): the same write goes
    /// on from where it stopped before the next one starts.
    private func encryptQueuedWrites(_ tls: TLSConnection) -> Int? {
        var total = 0
        var i = 0
        var offset = 0  // bytes of write `i` encrypted in this pass
        while i < writes.count && total < Self.tlsWriteBatch {
            let (written, left) = writes.at(i) { op -> (Int, Int) in
                let left = op.remaining - offset
                let take = min(left, Self.tlsWriteBatch - total)
                let written = op.data.withUnsafeBytes { raw in
                    Int(SSL_write(tls.ssl, raw.baseAddress! + op.done + offset, Int32(take)))
                }
                return (written, left)
            }
            guard written > 0 else {
                closeWithError(ConnectionError(passingThrough: TLSError.fromQueue(.protocolError, "TLS write failed")))
                return nil
            }
            total += written
            if written < left {
                offset += written
            } else {
                i += 1
                offset = 0
            }
        }
        return total
    }

    /// Sends the ciphertext OpenSSL wrote until it is all sent or the kernel is full; false if the socket
    /// closed on a send error.
    func flushTLSOutput(_ tls: TLSConnection) -> Bool {
        while tls.hasOutput && !readiness.contains(.writeBlocked) {
            switch Self.result({ () throws(SyscallError) in try Syscall.send(fd, tls.output) }) {
            case .sent(let count):
                eventLoop.countSocket(CEPOLL_STREAM_BYTES_OUT, count)
                tls.outputSent(count)
            case .wouldBlock:
                readiness.insert(.writeBlocked)
            case .failed(let error):
                closeWithError(ConnectionError(error))
                return false
            }
        }
        return true
    }

    /// A handshake that ended with `error` before it completed: counted (``SocketCounts``) and, unless the
    /// peer only left (a health check that connects and closes), reported to ``LoopDiagnostics``.
    private func handshakeFailed(_ error: ConnectionError) {
        eventLoop.countSocket(CEPOLL_TLS_FAILURES)
        guard let failure = error.underlying as? TLSError, failure.code != .closedDuringHandshake else { return }
        LoopDiagnostics.report(LoopDiagnostic(
            category: .tlsHandshakeFailure, loop: eventLoop.name, message: "TLS handshake failed: \(failure)"))
    }

    /// Part of every close (`tearDown`'s action, whose `phase` is the one that ends): a close_notify when
    /// the session was up and the close is not itself a TLS failure (one nonblocking `send`, so closing
    /// never waits on the peer), then the layer goes. `writeShutDown`: the close_notify went with the
    /// write side's shutdown already.
    func endTLS(_ tls: TLSConnection, phase: TLSPhase, writeShutDown: Bool, error: ConnectionError?) {
        if phase != .established, let error { handshakeFailed(error) }
        eventLoop.cancelOnLoop(tls.handshakeTimer)
        tls.handshakeTimer = .invalid
        if phase == .established && error?.isTLSFailure != true && fd >= 0 && !writeShutDown {
            tls.shutdown()
            if tls.hasOutput { _ = try? Syscall.send(fd, tls.output) }
        }
        tlsLayer = nil
    }
}

/// `startTLS`'s settings, carried by its read-queue marker until the handshake starts.
final class TLSStart {
    let configuration: Result<TLSConfiguration, any Error>

    init(_ configuration: TLSConfiguration) {
        self.configuration = .success(configuration)
    }

    init(_ error: any Error) {
        self.configuration = .failure(error)
    }
}

/// True for the first ``claim()`` only, from any thread.
final class OneShot: Sendable {
    private let claimed = Locked(false)

    func claim() -> Bool {
        claimed.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }
}
