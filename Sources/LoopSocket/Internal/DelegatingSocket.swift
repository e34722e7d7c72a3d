import Dispatch

/// A change to a socket's delegate, its queue, or both.
enum DelegateChange<Delegate> {
    case delegate(Delegate?)
    case queue(DispatchQueue?)
    case both(Delegate?, DispatchQueue?)

    /// Writes the change into one copy of the pair (the one under the lock, or the loop's).
    func apply(delegate: inout Delegate?, queue: inout DispatchQueue?) {
        switch self {
        case .delegate(let newDelegate):
            delegate = newDelegate
        case .queue(let newQueue):
            queue = newQueue
        case .both(let newDelegate, let newQueue):
            delegate = newDelegate
            queue = newQueue
        }
    }
}

/// A socket with a delegate and a delegate queue (``GCDAsyncSocket``, ``GCDAsyncUdpSocket``), each kept twice:
/// under the socket's lock for the getters any thread may call, and on the loop for the callbacks, which
/// read it with no lock.
protocol DelegatingSocket: LoopPinned, Sendable {
    associatedtype Delegate
    /// The loop's copy of the delegate. Loop only.
    var loopDelegate: Delegate? { get set }
    /// The loop's copy of the delegate queue. Loop only.
    var loopDelegateQueue: DispatchQueue? { get set }
    /// Applies a change to the copy the getters read, under the socket's lock.
    func storeDelegate(_ change: DelegateChange<Delegate>)
}

extension DelegatingSocket {
    /// Changes the delegate or its queue: the getters see it at once, the loop in order with its other work.
    /// `waiting`: returns only once the loop uses it, so that no callback reaches the previous delegate
    /// afterwards from the loop (CocoaAsyncSocket's `synchronouslySet…`; a callback already queued on the
    /// previous delegate queue may still run), waiting from any thread, another loop's included. Except when
    /// the socket's loop waits, itself or through other loops, for the calling loop: waiting would deadlock
    /// them, so the change is queued and the call returns at once, as if not `waiting`.
    func changeDelegate(_ change: DelegateChange<Delegate>, waiting: Bool) {
        storeDelegate(change)
        if waiting {
            switch waitForLoop({ change.apply(delegate: &loopDelegate, queue: &loopDelegateQueue) }) {
            case .ran, .loopShutDown: return
            case .wouldDeadlock: break
            }
        }
        let box = UncheckedSendable(change)
        onLoop { [self] in box.value.apply(delegate: &loopDelegate, queue: &loopDelegateQueue) }
    }
}
