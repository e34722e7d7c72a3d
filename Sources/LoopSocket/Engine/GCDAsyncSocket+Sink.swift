import Dispatch
import FoundationEssentials

/// The sink: where callbacks go. An `AsyncSocket`'s handler, inline; otherwise the delegate, inline on the loop
/// when there is no delegate queue, else `async` onto the queue. (A read's callback is delivered by the read
/// engine itself, `notifyDidRead` in +Receive.)
extension GCDAsyncSocket {
    /// Where the next callback goes. Loop only.
    @inline(__always)
    var delegateTarget: DelegateTarget<any GCDAsyncSocketDelegate> {
        if case .async(let handler) = sink { return .inline(handler) }
        return DelegateTarget(loopDelegate, queue: loopDelegateQueue)
    }

    /// Makes `handler` the socket's sink (``Sink/async(_:)``): callbacks go to it inline, and calls from
    /// outside a callback pump at once, so a write is sent, and a read queued, within the call (its sink
    /// never re-enters the caller). The public `delegate` reads nil from then on: the handler is not the
    /// user's. Any thread; on the loop without the closure `onLoop` allocates (every accepted async
    /// connection passes here).
    func useAsyncSink(_ handler: AsyncSocketHandler) {
        shared.withLock {
            $0.delegate = nil
            $0.delegateQueue = nil
        }
        if eventLoop.inEventLoop { setAsyncSink(handler) } else { onLoop { [self] in setAsyncSink(handler) } }
    }

    private func setAsyncSink(_ handler: AsyncSocketHandler) {
        loopDelegate = nil
        loopDelegateQueue = nil
        sink = .async(handler)
        pumpState.insert(.inline)
    }

    /// Delivers a callback (for the rarer events; the hot ones switch on ``delegateTarget`` themselves, so
    /// the inline path allocates no closure).
    func notify(_ event: @escaping (any GCDAsyncSocketDelegate, GCDAsyncSocket) -> Void) {
        delegateTarget.deliver(to: self, event)
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
