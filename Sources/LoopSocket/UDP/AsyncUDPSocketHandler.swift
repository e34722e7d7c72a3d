import EpollLoop
import FoundationEssentials

/// The socket behind an ``AsyncUDPSocket``: a ``GCDAsyncUdpSocket`` whose sink, the engine's route for what
/// happened (`sinkDidReceive` and `sinkDidSend`, the hot ones, and `sinkReport`), resumes continuations on the
/// loop instead of calling a delegate, and holds received datagrams until the task asks for them. A delegate
/// set on it is never called.
///
/// Loop-confined: every member it adds is touched on the socket's loop only (hence `@unchecked Sendable`).
///
/// Bounded: at most ``limit`` received items wait here. Reaching the bound pauses receiving, so a task that
/// stops asking leaves further datagrams in the kernel's socket buffer (which drops what does not fit), not
/// in memory; receiving resumes when the task has taken half of them. A pause in the middle of a `recvmmsg`
/// batch holds the rest of that batch in the socket (at most 64 datagrams more).
final class AsyncUDPSocketHandler: GCDAsyncUdpSocket, @unchecked Sendable {
    typealias Datagram = AsyncUDPSocket.Datagram

    /// A received datagram, or an error reported in its place (an ICMP error, an over-long datagram).
    enum Item {
        case datagram(Datagram)
        case failure(GCDAsyncUdpSocketError)
    }

    let limit: Int
    private var items: [Item] = []
    private var itemsStart = 0
    /// Receiving is paused because ``limit`` items wait.
    private(set) var paused = false
    /// The task waiting in `receive()`, with the id its cancellation names.
    private var receiver: (id: UInt64, continuation: UnsafeContinuation<Datagram?, any Error>)?
    private var nextWaiterID: UInt64 = 1
    /// Sends waiting for the kernel to take their datagram, by tag.
    private var senders: [Int: UnsafeContinuation<Void, any Error>] = [:]
    private var nextTag = 0
    private var connectWaiter: UnsafeContinuation<Void, any Error>?
    private var closeWaiters: [UnsafeContinuation<Void, Never>] = []
    /// Set once the socket has closed: later receives return nil, later sends fail.
    private(set) var closed = false
    private(set) var closeError: GCDAsyncUdpSocketError?

    init(limit: Int, loop: EventLoop?, group: EventLoopGroup?) {
        self.limit = max(1, limit)
        super.init(delegate: nil, delegateQueue: nil, loop: loop, group: group)
    }

    var bufferedCount: Int { items.count - itemsStart }
    /// A task waits in `receive()`.
    var hasReceiver: Bool { receiver != nil }

    // MARK: Receiving

    /// The next waiting item, if any; resumes receiving when enough have been taken.
    func takeBuffered() -> Item? {
        guard itemsStart < items.count else { return nil }
        let item = items[itemsStart]
        itemsStart += 1
        if itemsStart == items.count {
            items.removeAll(keepingCapacity: items.capacity <= 64)
            itemsStart = 0
        } else if itemsStart >= 64 && itemsStart * 2 >= items.count {
            items.removeFirst(itemsStart)
            itemsStart = 0
        }
        if paused && bufferedCount <= limit / 2 && !closed {
            paused = false
            try? startReceiving(.continuous)
        }
        return item
    }

    /// Completes `continuation` now (a waiting item, or the end after a close) or keeps it until one comes.
    func waitForDatagram(_ continuation: UnsafeContinuation<Datagram?, any Error>, _ cancellation: PendingCancellation<UInt64>) {
        if cancellation.cancelled { return continuation.handOff(throwing: CancellationError()) }
        if let item = takeBuffered() { return Self.resume(continuation, with: item) }
        if closed { return Self.resumeAtEnd(continuation, closeError) }
        guard receiver == nil else {
            return continuation.handOff(throwing: GCDAsyncUdpSocketError(.badConfigError,
                "Another task is already receiving from this socket: an AsyncUDPSocket has one receiver at a time"))
        }
        let id = nextWaiterID
        nextWaiterID &+= 1
        cancellation.id = id
        receiver = (id, continuation)
    }

    func cancelReceive(_ id: UInt64) {
        guard let receiver, receiver.id == id else { return }
        self.receiver = nil
        receiver.continuation.handOff(throwing: CancellationError())
    }

    private func arrived(_ item: Item) {
        if let receiver {
            self.receiver = nil
            return Self.resume(receiver.continuation, with: item)
        }
        // Errors can arrive while receiving is paused (an ICMP error is taken even then, so that it does not
        // spin the loop): past twice the bound they are dropped, so they cannot grow memory either.
        if case .failure = item, bufferedCount >= 2 * limit { return }
        items.append(item)
        if bufferedCount >= limit && !paused {
            paused = true
            stopReceiving()
        }
    }

    private static func resume(_ continuation: UnsafeContinuation<Datagram?, any Error>, with item: Item) {
        switch item {
        case .datagram(let datagram): continuation.handOff(returning: datagram)
        case .failure(let error): continuation.handOff(throwing: error)
        }
    }

    /// After a close: nil (the end of the datagrams), or the error that closed the socket.
    private static func resumeAtEnd(_ continuation: UnsafeContinuation<Datagram?, any Error>, _ error: GCDAsyncUdpSocketError?) {
        if let error { continuation.handOff(throwing: error) } else { continuation.handOff(returning: nil) }
    }

    // MARK: Sending

    /// Registers `continuation` for the next send and returns its tag; nil (after failing it) once closed.
    func registerSend(_ continuation: UnsafeContinuation<Void, any Error>, _ cancellation: PendingCancellation<Int>) -> Int? {
        if cancellation.cancelled {
            continuation.handOff(throwing: CancellationError())
            return nil
        }
        if closed {
            continuation.handOff(throwing: closeError ?? GCDAsyncUdpSocketError.closed)
            return nil
        }
        let tag = nextTag
        nextTag &+= 1
        cancellation.id = tag
        senders[tag] = continuation
        return tag
    }

    /// Stops waiting for send `tag` (its datagram stays queued and is still sent).
    func cancelSend(_ tag: Int) {
        senders.removeValue(forKey: tag)?.handOff(throwing: CancellationError())
    }

    // MARK: Connecting and closing

    /// Keeps `continuation` for the outcome of the connect about to start, and returns true. Returns false
    /// after failing it, so that no connect starts, when the socket is closed or another connect is waiting:
    /// the slot holds one continuation, and a second stored over the first would leave the first suspended
    /// for ever (the socket reports one outcome, and the close resumes only what the slot holds).
    func waitForConnect(_ continuation: UnsafeContinuation<Void, any Error>) -> Bool {
        if closed {
            continuation.handOff(throwing: closeError ?? GCDAsyncUdpSocketError.closed)
            return false
        }
        guard connectWaiter == nil else {
            continuation.handOff(throwing: GCDAsyncUdpSocketError(.badConfigError,
                "Another connect(host:port:) on this socket is still waiting for its outcome: connect once at a time"))
            return false
        }
        connectWaiter = continuation
        return true
    }

    func waitForClose(_ continuation: UnsafeContinuation<Void, Never>) {
        if closed { return continuation.handOff() }
        closeWaiters.append(continuation)
    }

    /// The socket closed (or, never having had a descriptor, will report nothing): ends everything waiting.
    func finish(_ error: GCDAsyncUdpSocketError?) {
        guard !closed else { return }
        closed = true
        closeError = error
        if let receiver {
            self.receiver = nil
            Self.resumeAtEnd(receiver.continuation, error)
        }
        let waiting = senders
        senders.removeAll()
        for continuation in waiting.values { continuation.handOff(throwing: error ?? GCDAsyncUdpSocketError.closed) }
        connectWaiter?.handOff(throwing: error ?? GCDAsyncUdpSocketError.closed)
        connectWaiter = nil
        let closeWaiters = self.closeWaiters
        self.closeWaiters.removeAll()
        for continuation in closeWaiters { continuation.handOff() }
    }

    /// A connect that could not start (refused at once): fails the task waiting for it.
    func connectFailed(_ error: GCDAsyncUdpSocketError) {
        connectWaiter?.handOff(throwing: error)
        connectWaiter = nil
    }

    // MARK: The sink (see DatagramEngine): the engine's events, to the waiting tasks.

    override func sinkDidReceive(_ data: Data, from address: Data, context: Any?) {
        arrived(.datagram(Datagram(data: data, sender: address)))
    }

    override func sinkDidSend(tag: Int) {
        senders.removeValue(forKey: tag)?.handOff()
    }

    override func sinkReport(_ event: DatagramEvent) {
        switch event {
        case .didNotSend(let tag, let failure):
            senders.removeValue(forKey: tag)?.handOff(throwing: GCDAsyncUdpSocketError(failure))
        case .didNotReceive(let failure):
            arrived(.failure(GCDAsyncUdpSocketError(failure)))
        case .connected:
            connectWaiter?.handOff()
            connectWaiter = nil
        case .didNotConnect(let failure):
            connectFailed(GCDAsyncUdpSocketError(failure))
        case .closed(let failure):
            finish(failure.map(GCDAsyncUdpSocketError.init))
        }
    }
}
