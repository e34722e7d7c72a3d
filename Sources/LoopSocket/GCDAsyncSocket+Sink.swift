import Dispatch
import EpollLoop
import FoundationEssentials
import Synchronization

/// The face's sink: the engine's events (a read, a write, and ``ConnectionReport`` for the rest) become
/// delegate callbacks, inline on the loop when there is no delegate queue, else `async` onto the queue; or
/// go to an ``AsyncSocket``'s handler (``AsyncSocketHandler/report(_:from:)``), inline.
extension GCDAsyncSocket {
    /// Where the next delegate callback goes: nowhere for an ``AsyncSocket``'s socket, whose handler the
    /// sink methods call directly. Loop only.
    @inline(__always)
    var delegateTarget: DelegateTarget<any GCDAsyncSocketDelegate> {
        if case .async = recipient { return .none }
        return DelegateTarget(loopDelegate, queue: loopDelegateQueue)
    }

    /// Makes `handler` the socket's sink (``Recipient/async(_:)``): callbacks go to it inline, and calls from
    /// outside a callback pump at once, so a write is sent, and a read queued, within the call (its sink
    /// never re-enters the caller). The public `delegate` reads nil from then on: the handler is not the
    /// user's. Any thread; on the loop without the closure `onLoop` allocates (every accepted async
    /// connection passes here).
    func useAsyncHandler(_ handler: AsyncSocketHandler) {
        withLock {
            // Not a `GCDAsyncSocketDelegate`, so the getter reads nil; but a connect finds someone to tell.
            // One object for every socket: a weak reference to each connection's handler would cost each its
            // own side-table allocation, part of every idle async connection.
            reportedDelegate = Self.asyncStandIn
            reportedDelegateQueue = nil
        }
        if eventLoop.inEventLoop { setAsyncHandler(handler) } else { onLoop { [self] in setAsyncHandler(handler) } }
    }

    /// What the lock-guarded delegate of a socket with an async handler reads as (never called: the handler
    /// itself is in ``recipient``).
    private static let asyncStandIn = AsyncSocketHandler()

    private func setAsyncHandler(_ handler: AsyncSocketHandler) {
        loopDelegate = nil
        loopDelegateQueue = nil
        recipient = .async(handler)
        pumpInline()
    }

    /// Delivers a callback (for the rarer events; the hot ones switch on ``delegateTarget`` themselves, so
    /// the inline path allocates no closure).
    func notify(_ event: @escaping (any GCDAsyncSocketDelegate, GCDAsyncSocket) -> Void) {
        delegateTarget.deliver(to: self, event)
    }

    /// The delegate callback for one of the engine's reports. Inlined into the sink's one override, so the
    /// report is switched on where it arrives rather than passed on (every connection has two: accepted or
    /// connected, and the disconnect).
    @inline(__always)
    func deliver(_ event: ConnectionReport) {
        switch event {
        case .accepted(let accepted):
            deliverAccept(accepted)
        case .continuousChunk(let data):
            deliverContinuousChunk(data)
        case .timeoutAsked(let direction, let tag, let elapsed, let done, let answer):
            askShouldTimeout(direction, tag: tag, elapsed: elapsed, done: done, answer: answer)
        case .trustAsked(let trust, let decide):
            askTrust(trust, decide: decide)
        case .writesDropped:
            break
        case .disconnected(let error):
            notifyDidDisconnect(error.map(GCDAsyncSocketError.reporting))
        case .connected(let host, let port):
            notify { $0.socket($1, didConnectToHost: host, port: port) }
        case .connectedToURL(let url):
            notify { $0.socket($1, didConnectTo: url) }
        case .acceptFailed(let failure):
            let error = GCDAsyncSocketError(failure)
            notify { $0.socket($1, didFailToAcceptWithError: error) }
        case .readProgress(let length, let tag):
            notify { $0.socket($1, didReadPartialDataOfLength: UInt(length), tag: tag) }
        case .readFailed(let tag, let failure):
            let error = GCDAsyncSocketError.reporting(failure)
            notify { $0.socket($1, didFailToReadDataWithTag: tag, error: error) }
        case .readStreamClosed:
            notify { $0.socketDidCloseReadStream($1) }
        case .writeProgress(let length, let tag):
            notify { $0.socket($1, didWritePartialDataOfLength: UInt(length), tag: tag) }
        case .writeFailed(let tag, let failure):
            let error = GCDAsyncSocketError.reporting(failure)
            notify { $0.socket($1, didFailToWriteDataWithTag: tag, error: error) }
        case .writabilityChanged(let writable):
            notify { $0.socket($1, didChangeWritability: writable) }
        case .secured:
            notify { $0.socketDidSecure($1) }
        }
    }

    /// A chunk of continuous reads as `socket(_:didRead:withTag:)`: inline, or on the delegate queue,
    /// where it counts as in flight until delivered (``ConnectionEngine/dispatchContinuousChunk()``).
    private func deliverContinuousChunk(_ data: Data) {
        switch delegateTarget {
        case .none:
            return
        case .inline(let delegate):
            delegate.socket(self, didRead: data, withTag: continuousChunkTag)
        case .queued(let delegate, let queue):
            let (tag, delivered) = dispatchContinuousChunk()
            let box = UncheckedSendable(delegate)
            queue.async { [self] in
                box.value.socket(self, didRead: data, withTag: tag)
                delivered()
            }
        }
    }

    /// `socket(_:shouldTimeoutReadWithTag:…)` or its write twin: inline, the answer now; on a queue, the
    /// answer later; with nobody to ask, no more time.
    private func askShouldTimeout(_ direction: Direction, tag: Int, elapsed: TimeInterval, done: Int, answer: TimeoutAnswer) {
        @Sendable func ask(_ delegate: any GCDAsyncSocketDelegate, _ socket: GCDAsyncSocket) -> TimeInterval {
            direction == .read
                ? delegate.socket(socket, shouldTimeoutReadWithTag: tag, elapsed: elapsed, bytesDone: UInt(done))
                : delegate.socket(socket, shouldTimeoutWriteWithTag: tag, elapsed: elapsed, bytesDone: UInt(done))
        }
        switch delegateTarget {
        case .none:
            answer.now = 0
        case .inline(let delegate):
            answer.now = ask(delegate, self)
        case .queued(let delegate, let queue):
            answer.now = nil
            let box = UncheckedSendable(delegate)
            queue.async { [self] in answer.later(ask(box.value, self)) }
        }
    }

    /// `socket(_:didReceive:completionHandler:)`; not trusted with no delegate to ask.
    private func askTrust(_ trust: TLSTrust, decide: @escaping @Sendable (Bool) -> Void) {
        if case .none = delegateTarget { return decide(false) }
        notify { $0.socket($1, didReceive: trust, completionHandler: decide) }
    }

    /// A socket for the descriptor this listener accepted, with the listener's delegate, on the queue its
    /// `newSocketQueueForConnection` chooses (else the listener's delegate queue); then
    /// `socket(_:didAcceptNewSocket:)`, and the new socket starts: right after an inline callback, from the
    /// delegate queue after a queued one.
    private func deliverAccept(_ accepted: Accepted) {
        let delegate = loopDelegate  // one weak load for the whole accept: a delegate's retains are slow
        var queue = loopDelegateQueue
        if let delegate, let chosen = queueChosen(by: delegate, accepted: accepted) { queue = chosen }
        let socket = GCDAsyncSocket(delegate: delegate, delegateQueue: queue, loop: accepted.loop, configuration: config)
        setUpAccepted(socket, fd: accepted.fd, isUnix: accepted.isUnix)
        guard let delegate else { return socket.startAdopted() }
        guard let listenerQueue = loopDelegateQueue else {
            delegate.socket(self, didAcceptNewSocket: socket)
            return socket.startAdopted()
        }
        let box = UncheckedSendable(delegate)
        listenerQueue.async { [self] in
            box.value.socket(self, didAcceptNewSocket: socket)
            socket.startAdopted()
        }
    }

    /// `newSocketQueueForConnection(fromAddress:on:)`, asked as GCDAsyncSocket asks it: only of a delegate
    /// that implements it (`respondsToSelector:`). A Swift protocol cannot say whether a type implements a
    /// requirement or takes its default, so the default tells the listener that it ran, and a delegate of
    /// that type is not asked again (a type's witness never changes). What that saves every accepted
    /// connection: copying the peer's address into a `Data` nobody reads, two allocations and about 1,000
    /// instructions with its release (callgrind, connect churn).
    private func queueChosen(by delegate: any GCDAsyncSocketDelegate, accepted: Accepted) -> DispatchQueue? {
        let memo: QueueChooserMemo
        switch recipient {
        case .listeningDelegate(let existing): memo = existing
        case .delegate, .delegateIgnoringWrites:
            memo = QueueChooserMemo()
            recipient = .listeningDelegate(memo)
        case .async: return nil
        }
        let type = ObjectIdentifier(Swift.type(of: delegate))
        if memo.defaultAnswerType == type { return nil }
        memo.defaultAnswerRan = false
        let chosen = delegate.newSocketQueueForConnection(fromAddress: accepted.peer?.data ?? Data(), on: self)
        if memo.defaultAnswerRan {
            memo.defaultAnswerRan = false
            memo.defaultAnswerType = type
        }
        return chosen
    }

    /// Called by the default `newSocketQueueForConnection`: see ``queueChosen(by:accepted:)``. Only on the loop,
    /// where the listener asks; a call from anywhere else changes nothing.
    func noteDefaultQueueChooserRan() {
        guard eventLoop.inEventLoop, case .listeningDelegate(let memo) = recipient else { return }
        memo.defaultAnswerRan = true
    }

    /// Called by the default `socket(_:didWriteDataWithTag:)`: the socket's delegate takes it, so later
    /// completed writes skip the callback, and the delegate's weak load with it (the default does nothing, so
    /// nothing observable changes; ``queueChosen(by:accepted:)`` says why a Swift protocol needs the default
    /// to tell). Only on the loop, for the socket's own inline delegate: the default called on another
    /// object, or on a delegate queue, changes nothing. A new delegate is asked again. The delegate's type
    /// is remembered too, so that the sockets made for it later (a listener's accepted sockets) start
    /// without the callback instead of each learning it at its first write.
    func noteDefaultDidWriteRan(by delegate: AnyObject) {
        guard eventLoop.inEventLoop, case .delegate = recipient, loopDelegateQueue == nil,
              loopDelegate === delegate else { return }
        recipient = .delegateIgnoringWrites
        Self.typeIgnoringWrites.store(UInt(bitPattern: ObjectIdentifier(type(of: delegate))), ordering: .relaxed)
    }

    /// The type of the last delegate seen to take the default `socket(_:didWriteDataWithTag:)`, as an
    /// `ObjectIdentifier`'s bits (0: none yet). One slot for the process, as a server has one delegate type
    /// for its connections: a type's witness never changes and its metadata lives as long as the process.
    private static let typeIgnoringWrites = Atomic<UInt>(0)

    /// Where a new socket's callbacks go: nowhere for writes if `delegate`'s type is known to take the
    /// default (``typeIgnoringWrites``), whatever the socket's delegate queue (the default does nothing
    /// wherever it would run).
    static func recipient(for delegate: (any GCDAsyncSocketDelegate)?) -> Recipient {
        guard let delegate else { return .delegate }
        let type = UInt(bitPattern: ObjectIdentifier(Swift.type(of: delegate)))
        return type == typeIgnoringWrites.load(ordering: .relaxed) ? .delegateIgnoringWrites : .delegate
    }

    /// `socketDidDisconnect(_:withError:)`: once per connection, without a closure for the inline case.
    func notifyDidDisconnect(_ error: (any Error)?) {
        switch delegateTarget {
        case .none: return
        case .inline(let delegate): delegate.socketDidDisconnect(self, withError: error)
        case .queued(let delegate, let queue):
            let box = UncheckedSendable((delegate, error))
            queue.async { [self] in box.value.0.socketDidDisconnect(self, withError: box.value.1) }
        }
    }
}

/// A listener's note about its delegate's `newSocketQueueForConnection`, kept between accepts: the
/// delegate's type found to take the default answer (not asked again), and whether that default ran since
/// last cleared. Loop only.
final class QueueChooserMemo {
    var defaultAnswerType: ObjectIdentifier?
    var defaultAnswerRan = false
}
