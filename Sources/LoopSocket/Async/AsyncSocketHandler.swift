import EpollLoop
import FoundationEssentials

/// What stands behind an ``AsyncSocket`` or ``AsyncListener``: the socket's sink hands it every report
/// (``report(_:from:)``), and it resumes the continuations of the events `async` callers wait for
/// (connected, secured, writability, a failed write, accepted, the disconnect). Reads do not come through
/// here (their continuations ride on the read operations).
/// Every stored property is confined to the socket's loop, where the callbacks run (no delegate queue).
final class AsyncSocketHandler: @unchecked Sendable {
    // Every connection holds one, so it is part of an idle connection's footprint: what only a listener, a
    // connecting client, a TLS handshake, a writer held back by backpressure or a close that dropped writes
    // uses lives in `rare`, allocated for those alone, and the 8-byte fields come first so the small ones
    // share the last word (67 bytes, an 80-byte chunk).
    /// Callers of `close` and `closeAfterWriting`, resumed by the disconnect; and the timer that bounds
    /// `closeAfterWriting`.
    var closeWaiters: [UnsafeContinuation<Void, any Error>] = []
    var closeTimer: TimerID = .invalid
    /// The first failure seen (a failed write, the disconnect); later operations throw it.
    var failure: (any Error)?
    /// The task running an `executeThenClose` on the loop (compared, never used: see `AsyncSocket+Scope`),
    /// whose reads use that scope's one cancellation registration; nil when no scope is open.
    var scopeTask: UnsafeRawPointer?
    private var rare: Rare?
    /// Which scope is open (bumped by each): a scope's late release or cancellation cannot touch a newer one.
    var scopeSerial: UInt32 = 0
    /// The read the open scope's task waits in.
    var scopeReadID: UInt32?
    var disconnected = false
    /// False from when the write queue passes its high water mark until it falls below the low one.
    var isWritable = true

    /// What a listener, a handed-out connection, a connect, a handshake, backpressure or a lossy close needs.
    private final class Rare {
        var connectContinuation: UnsafeContinuation<Void, any Error>?
        var secureContinuation: UnsafeContinuation<Void, any Error>?
        var accepted: AcceptQueue?
        var acceptFailed: (@Sendable (any Error) -> Void)?
        var serverTLS: TLSConfiguration?
        var handOut: AcceptQueue?
        var handshakeFailed: (@Sendable (any Error) -> Void)?
        var writableWaiters: [(id: UInt32, continuation: UnsafeContinuation<Void, any Error>)] = []
        var nextWaiterID: UInt32 = 0
        var droppedWrites: (any Error)?
    }

    /// Sets a field of `rare`, allocating it only for a value other than nil.
    private func setRare<T>(_ value: T?, _ field: ReferenceWritableKeyPath<Rare, T?>) {
        if rare == nil {
            guard value != nil else { return }
            rare = Rare()
        }
        rare![keyPath: field] = value
    }

    /// Why queued bytes were not written, if the close dropped some: what `closeAfterWriting` throws.
    var droppedWrites: (any Error)? {
        get { rare?.droppedWrites }
        set { setRare(newValue, \.droppedWrites) }
    }

    /// Adds a writer waiting for the write queue to fall below its low water mark; returns its id (for
    /// ``cancelWritableWaiter(_:)``).
    func addWritableWaiter(_ continuation: UnsafeContinuation<Void, any Error>) -> UInt32 {
        if rare == nil { rare = Rare() }
        let rare = rare!
        let id = rare.nextWaiterID
        rare.nextWaiterID &+= 1
        rare.writableWaiters.append((id, continuation))
        return id
    }

    /// Writers waiting for writability.
    var writableWaiterCount: Int { rare?.writableWaiters.count ?? 0 }

    /// Removes and returns every waiting writer.
    private func takeWritableWaiters() -> [(id: UInt32, continuation: UnsafeContinuation<Void, any Error>)] {
        guard let rare, !rare.writableWaiters.isEmpty else { return [] }
        let waiters = rare.writableWaiters
        rare.writableWaiters = []
        return waiters
    }

    /// The connect waiting for its outcome.
    var connectContinuation: UnsafeContinuation<Void, any Error>? {
        get { rare?.connectContinuation }
        set { setRare(newValue, \.connectContinuation) }
    }
    /// The `startTLS` (or `connect(..., tls:)`) waiting for the handshake.
    var secureContinuation: UnsafeContinuation<Void, any Error>? {
        get { rare?.secureContinuation }
        set { setRare(newValue, \.secureContinuation) }
    }

    /// For listeners: where accepted connections go.
    var accepted: AcceptQueue? {
        get { rare?.accepted }
        set { setRare(newValue, \.accepted) }
    }
    /// For listeners: told of connections that could not be accepted (the descriptor limit, mostly).
    var acceptFailed: (@Sendable (any Error) -> Void)? {
        get { rare?.acceptFailed }
        set { setRare(newValue, \.acceptFailed) }
    }
    /// The settings a TLS listener starts on every accepted connection.
    var serverTLS: TLSConfiguration? {
        get { rare?.serverTLS }
        set { setRare(newValue, \.serverTLS) }
    }
    /// A TLS listener's connection in its handshake: handed to the listener's stream once secured, or
    /// reported to `handshakeFailed` if it fails.
    var handOut: AcceptQueue? {
        get { rare?.handOut }
        set { setRare(newValue, \.handOut) }
    }
    var handshakeFailed: (@Sendable (any Error) -> Void)? {
        get { rare?.handshakeFailed }
        set { setRare(newValue, \.handshakeFailed) }
    }

    /// One of the engine's reports, through the socket's sink: the one route of everything but reads and
    /// writes (progress and read failures have no waiter: reads resume their own continuations; questions
    /// get the answer of nobody to ask).
    func report(_ event: ConnectionReport, from socket: GCDAsyncSocket) {
        switch event {
        case .accepted(let accepted):
            // An `AsyncListener`'s listener: the handler gives the new socket a sink of its own.
            let newSocket = GCDAsyncSocket(delegate: nil, delegateQueue: nil, loop: accepted.loop, configuration: socket.config)
            socket.setUpAccepted(newSocket, fd: accepted.fd, isUnix: accepted.isUnix)
            self.accepted(newSocket)
            newSocket.startAdopted()
        case .disconnected(let error):
            disconnected(socket, error: error.map(GCDAsyncSocketError.reporting))
        case .writesDropped(let error):
            closeDroppedWrites(error.map(GCDAsyncSocketError.reporting))
        case .trustAsked(_, let decide):
            decide(false)
        case .connected, .connectedToURL:
            resumeConnect(nil)
        case .acceptFailed(let error):
            acceptFailed?(GCDAsyncSocketError(error))
        case .secured:
            secured(socket)
        case .writabilityChanged(let writable):
            writabilityChanged(writable)
        case .writeFailed(_, let error):
            if failure == nil { failure = GCDAsyncSocketError.reporting(error) }
        case .readProgress, .readFailed, .readStreamClosed, .writeProgress, .continuousChunk, .timeoutAsked:
            break
        }
    }

    /// A listener accepted `newSocket`: it gets a handler of its own, and goes to the listener's stream
    /// (after its handshake, for a TLS listener).
    func accepted(_ newSocket: GCDAsyncSocket) {
        let handler = AsyncSocketHandler()
        newSocket.useAsyncHandler(handler)
        guard let serverTLS, let accepted else {
            accepted?.yield(AsyncSocket(socket: newSocket, handler: handler))
            return
        }
        // The handshake runs on the connection's own loop; the listener goes on accepting meanwhile.
        handler.handOut = accepted
        handler.handshakeFailed = acceptFailed
        newSocket.startTLS(serverTLS)
    }

    private func secured(_ sock: GCDAsyncSocket) {
        if let continuation = secureContinuation {
            secureContinuation = nil
            continuation.handOff()
        }
        if let handOut {
            self.handOut = nil
            handOut.yield(AsyncSocket(socket: sock, handler: self))
        }
    }

    private func writabilityChanged(_ isWritable: Bool) {
        self.isWritable = isWritable
        guard isWritable else { return }
        for waiter in takeWritableWaiters() { waiter.continuation.handOff() }
    }

    /// The connection ended: every waiter is resumed, with `err` or the closed error.
    func disconnected(_ sock: GCDAsyncSocket, error err: (any Error)?) {
        disconnected = true
        let error = err ?? GCDAsyncSocketError(.closedError, "The socket is closed")
        if failure == nil { failure = error }
        resumeConnect(error)
        if let continuation = secureContinuation {
            secureContinuation = nil
            continuation.handOff(throwing: error)
        }
        if handOut != nil {
            handOut = nil
            handshakeFailed?(error)
        }
        for waiter in takeWritableWaiters() { waiter.continuation.handOff(throwing: error) }
        sock.eventLoop.cancelOnLoop(closeTimer)
        closeTimer = .invalid
        let closing = closeWaiters
        closeWaiters = []
        for waiter in closing { resumeCloseWaiter(waiter) }
        if let accepted {
            self.accepted = nil
            accepted.finish(throwing: err == nil ? nil : error)
        }
    }

    /// The close that is under way failed queued writes (told before `socketDidDisconnect`): what
    /// `closeAfterWriting` then throws.
    func closeDroppedWrites(_ error: (any Error)?) {
        droppedWrites = error ?? GCDAsyncSocketError(.closedError, "The socket was closed before the queued writes were written")
    }

    func resumeConnect(_ error: (any Error)?) {
        guard let continuation = connectContinuation else { return }
        connectContinuation = nil
        if let error { continuation.handOff(throwing: error) } else { continuation.handOff() }
    }

    /// Closes the connection, failing what is still queued, if it is still open after `timeout` (the bound
    /// of `closeAfterWriting`; the first caller's timeout stands). Loop only.
    func closeAfter(_ timeout: Duration, _ socket: GCDAsyncSocket) {
        guard closeTimer == .invalid else { return }
        closeTimer = socket.eventLoop.scheduleOnLoop(at: (Deadline.now() + timeout).uptimeNanoseconds) {
            socket.closeWithError(ConnectionError(passingThrough: GCDAsyncSocketError(.writeTimeoutError, "The queued writes were not written within the close timeout")))
        }
    }

    /// Resumes a close waiter: with the error of the dropped writes, if the close dropped some.
    func resumeCloseWaiter(_ waiter: UnsafeContinuation<Void, any Error>) {
        if let droppedWrites { waiter.handOff(throwing: droppedWrites) } else { waiter.handOff() }
    }

    /// Stops waiting for writability (cancellation): the waiter throws `CancellationError`.
    func cancelWritableWaiter(_ id: UInt32) {
        guard let rare, let i = rare.writableWaiters.firstIndex(where: { $0.id == id }) else { return }
        rare.writableWaiters.remove(at: i).continuation.handOff(throwing: CancellationError())
    }
}
