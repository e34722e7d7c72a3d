import Dispatch

/// Where a socket's next delegate callback goes: nowhere, inline on the loop (no delegate queue given), or
/// `async` onto the delegate queue. One type for ``GCDAsyncSocket`` and ``GCDAsyncUdpSocket``.
///
/// The hot callbacks (a read, a write, a datagram) switch on this themselves so that the inline case
/// allocates no closure; the rarer ones go through ``deliver(to:_:)``.
enum DelegateTarget<Delegate> {
    case none
    case inline(Delegate)
    case queued(Delegate, DispatchQueue)

    /// The target for the loop's copies of the delegate and its queue.
    @inline(__always)
    init(_ delegate: Delegate?, queue: DispatchQueue?) {
        guard let delegate else {
            self = .none
            return
        }
        if let queue {
            self = .queued(delegate, queue)
        } else {
            self = .inline(delegate)
        }
    }

    /// Runs `event` with the delegate and `socket`, inline or on the delegate queue.
    func deliver<Socket: AnyObject & Sendable>(to socket: Socket, _ event: @escaping (Delegate, Socket) -> Void) {
        switch self {
        case .none:
            return
        case .inline(let delegate):
            event(delegate, socket)
        case .queued(let delegate, let queue):
            let box = UncheckedSendable((delegate, event))
            queue.async { box.value.1(box.value.0, socket) }
        }
    }
}
