import Dispatch
import FoundationEssentials

/// Delivering callbacks: inline on the loop when there is no delegate queue, else `async` onto the queue.
extension GCDAsyncSocket {
    /// Where the next callback goes. Loop only.
    @inline(__always)
    var delegateTarget: DelegateTarget<any GCDAsyncSocketDelegate> {
        if flags.contains(.ownsDelegate), let ownedDelegate { return .inline(ownedDelegate) }
        return DelegateTarget(loopDelegate, queue: loopDelegateQueue)
    }

    /// Makes `handler` the socket's delegate, held strongly, with callbacks inline (``AsyncSocket``'s sockets).
    /// The public `delegate` reads nil from then on: the handler is not the user's.
    func own(_ handler: AsyncSocketHandler) {
        shared.withLock {
            $0.delegate = nil
            $0.delegateQueue = nil
        }
        // On the loop already (an accept on the socket's own loop), without the closure `onLoop` allocates.
        if eventLoop.inEventLoop { useOwnedDelegate(handler) } else { onLoop { [self] in useOwnedDelegate(handler) } }
    }

    private func useOwnedDelegate(_ handler: AsyncSocketHandler) {
        loopDelegate = nil
        loopDelegateQueue = nil
        ownedDelegate = handler
        flags.insert(.ownsDelegate)
    }

    /// Delivers a callback (for the rarer events; the hot ones switch on ``delegateTarget`` themselves, so
    /// the inline path allocates no closure).
    func notify(_ event: @escaping (any GCDAsyncSocketDelegate, GCDAsyncSocket) -> Void) {
        delegateTarget.deliver(to: self, event)
    }

    /// `socket(_:didRead:withTag:)`.
    @inline(__always)
    func notifyDidRead(_ data: Data, tag: Int) {
        switch delegateTarget {
        case .none: return
        case .inline(let delegate): delegate.socket(self, didRead: data, withTag: tag)
        case .queued(let delegate, let queue):
            let box = UncheckedSendable(delegate)
            queue.async { [self] in box.value.socket(self, didRead: data, withTag: tag) }
        }
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

    /// `socket(_:didWriteDataWithTag:)`.
    @inline(__always)
    func notifyDidWrite(tag: Int) {
        switch delegateTarget {
        case .none: return
        case .inline(let delegate): delegate.socket(self, didWriteDataWithTag: tag)
        case .queued(let delegate, let queue):
            let box = UncheckedSendable(delegate)
            queue.async { [self] in box.value.socket(self, didWriteDataWithTag: tag) }
        }
    }
}
