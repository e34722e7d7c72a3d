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
        onLoop { [self] in
            loopDelegate = nil
            loopDelegateQueue = nil
            ownedDelegate = handler
            flags.insert(.ownsDelegate)
        }
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
