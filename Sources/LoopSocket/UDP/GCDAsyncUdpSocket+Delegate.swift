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

    /// Counts a queued delivery done; the one that brings the count down to half the bound wakes reading
    /// (which stopped at the bound; the count passes that value on its way down, so the wake-up is not missed).
    private func deliveredOnQueue() {
        let left = deliveriesInFlight.subtract(1, ordering: .relaxed).newValue
        if left == Self.maxDeliveriesInFlight / 2 { onLoop { [self] in updateInterest() } }
    }

    /// `udpSocket(_:didSendDataWithTag:)`.
    @inline(__always)
    func notifyDidSend(tag: Int) {
        switch delegateTarget {
        case .none: return
        case .inline(let delegate): delegate.udpSocket(self, didSendDataWithTag: tag)
        case .queued(let delegate, let queue):
            let box = UncheckedSendable(delegate)
            queue.async { [self] in box.value.udpSocket(self, didSendDataWithTag: tag) }
        }
    }
}
