import Dispatch
import FoundationEssentials

/// Delivering the engine's events as callbacks: inline on the loop when there is no delegate queue, else
/// `async` onto the queue.
extension GCDAsyncUdpSocket {
    /// Where the next callback goes. Loop only.
    @inline(__always)
    var delegateTarget: DelegateTarget<any GCDAsyncUdpSocketDelegate> {
        DelegateTarget(loopDelegate, queue: loopDelegateQueue)
    }

    /// Delivers a callback (for the rarer events; the hot ones switch on ``delegateTarget`` themselves, so
    /// the inline path allocates no closure).
    func notify(_ event: @escaping (any GCDAsyncUdpSocketDelegate, GCDAsyncUdpSocket) -> Void) {
        delegateTarget.deliver(to: self, event)
    }

    /// `udpSocket(_:didReceive:fromAddress:withFilterContext:)`.
    @inline(__always)
    func notifyDidReceive(_ data: Data, from address: Data, context: Any?) {
        switch delegateTarget {
        case .none: return
        case .inline(let delegate): delegate.udpSocket(self, didReceive: data, fromAddress: address, withFilterContext: context)
        case .queued(let delegate, let queue):
            let box = UncheckedSendable((delegate, context))
            deliveriesInFlight.add(1, ordering: .relaxed)
            queue.async { [self] in
                box.value.0.udpSocket(self, didReceive: data, fromAddress: address, withFilterContext: box.value.1)
                deliveredOnQueue()
            }
        }
    }

    /// Called by the default `udpSocket(_:didSendDataWithTag:)`: the socket's delegate takes it, so later
    /// sends skip the callback and the delegate's weak load (as ``GCDAsyncSocket``'s completed writes do).
    /// Only on the loop, for the socket's own inline delegate; a new delegate is asked again.
    func noteDefaultDidSendRan(by delegate: AnyObject) {
        guard eventLoop.inEventLoop, loopDelegateQueue == nil, loopDelegate === delegate else { return }
        sendCallbackIsDefault = true
    }

    /// Counts a queued delivery done; the one that brings the count down to half the bound wakes reading
    /// (which stopped at the bound; the count passes that value on its way down, so the wake-up is not missed).
    private func deliveredOnQueue() {
        let left = deliveriesInFlight.subtract(1, ordering: .relaxed).newValue
        if left == Self.maxDeliveriesInFlight / 2 { onLoop { [self] in updateInterest() } }
    }

    /// `udpSocket(_:didSendDataWithTag:)`.
    @inline(__always)
    func notifyDidSend(tag: Int) {
        // A delegate's weak load and its release, per datagram sent, for a callback most never implement.
        if sendCallbackIsDefault { return }
        switch delegateTarget {
        case .none: return
        case .inline(let delegate): delegate.udpSocket(self, didSendDataWithTag: tag)
        case .queued(let delegate, let queue):
            let box = UncheckedSendable(delegate)
            queue.async { [self] in box.value.udpSocket(self, didSendDataWithTag: tag) }
        }
    }
}
