/// A UDP socket's state on its loop: four small enums, each changed only by the transitions below, which
/// return what the engine must do (an action) rather than doing it. What is a fact of the descriptors (whether
/// any exists) is read from them and not stored here; how the pump is scheduled is ``PumpState``'s.
///
/// Unlike TCP's there is no stream to track: a datagram socket is bound or connected, receives or not, and
/// waits for the kernel on sends one way at a time.
struct DatagramState: Equatable {
    /// Where the socket stands with its addresses.
    enum Lifecycle: Hashable {
        /// New: nothing bound (options may have created descriptors).
        case idle
        /// Bound, explicitly or by a first send (the kernel picks an ephemeral port).
        case bound
        /// A connect is resolving its host; `fromBound`: the socket was bound before it, and stays so if it fails.
        case connecting(fromBound: Bool)
        /// Connected: sends need no address, and only the peer's datagrams arrive.
        case connected
        /// Closed; the socket may be bound again.
        case closed
    }

    /// Whether datagrams are read.
    enum Receiving: Equatable, CaseIterable {
        case off
        /// ``GCDAsyncUdpSocket/receiveOnce()``: the next datagram that passes the filter, then `off`.
        case once
        /// ``GCDAsyncUdpSocket/beginReceiving()``: every datagram.
        case continuous
        /// ``GCDAsyncUdpSocket/pauseReceiving()``: datagrams wait in the kernel (and a batch's rest is held).
        case paused
    }

    /// How the socket is to end.
    enum Ending: Equatable, CaseIterable {
        case none
        /// ``GCDAsyncUdpSocket/closeAfterSending()``: once the send queue is empty.
        case afterSends
    }

    /// What the front send waits for, if anything (one thing at a time).
    enum SendWait: Equatable, CaseIterable {
        case none
        /// `EAGAIN`: EPOLLOUT.
        case writable
        /// `ENOBUFS`: a short timer (EPOLLOUT would not come: the buffer has room).
        case noBuffers
        /// The send filter, out on its queue.
        case filter
    }

    /// Why a call was refused; the face words it as GCDAsyncUdpSocket does.
    enum Refusal: Equatable {
        case alreadyBound
        case bindAfterConnect
        case alreadyConnected
        case noDescriptor
        case multicastUnbound
        case multicastConnected
    }

    var lifecycle = Lifecycle.idle
    var receiving = Receiving.off
    var ending = Ending.none
    var sendWait = SendWait.none
    /// A `UDP_SEGMENT` send was refused by the route: one datagram per message from now on (until closed).
    var segmentationRefused = false

    // MARK: Queries

    var isConnected: Bool { lifecycle == .connected }
    var isConnecting: Bool {
        if case .connecting = lifecycle { return true }
        return false
    }
    var isReceiving: Bool { receiving == .once || receiving == .continuous }
    /// The front send may leave: nothing to wait for (a connect in progress holds sends back).
    var canSend: Bool { sendWait == .none && !isConnecting }
    /// The timers for the front send's deadline run only while it waits for the kernel.
    var sendWaitsForKernel: Bool { sendWait == .writable || sendWait == .noBuffers }

    // MARK: Lifecycle transitions

    /// An explicit bind is asked: `nil` to go ahead (then ``bound()`` once it succeeded), or why not.
    func bindAsked() -> Refusal? {
        switch lifecycle {
        case .idle, .closed: return nil
        case .bound: return .alreadyBound
        case .connecting, .connected: return .bindAfterConnect
        }
    }

    /// A bind succeeded, or a send or a connect bound the socket implicitly.
    mutating func bound() {
        switch lifecycle {
        case .idle, .closed: lifecycle = .bound
        case .connecting(fromBound: false): lifecycle = .connecting(fromBound: true)
        case .bound, .connecting, .connected: break
        }
    }

    /// A connect is asked: `nil` when it starts (resolve the host, then ``connectFinished(_:)``), or why not.
    mutating func connectAsked() -> Refusal? {
        switch lifecycle {
        case .idle, .closed: lifecycle = .connecting(fromBound: false)
        case .bound: lifecycle = .connecting(fromBound: true)
        case .connecting, .connected: return .alreadyConnected
        }
        return nil
    }

    /// What a finished connect leads to.
    enum ConnectOutcome: Equatable {
        /// Report success (and pump the sends that waited).
        case connected
        /// Report the failure (and pump the sends that waited, which then fail or leave unconnected).
        case failed
        /// No connect is in progress (a close came first): nothing to report.
        case stale
    }

    /// The connect's outcome arrived.
    mutating func connectFinished(_ succeeded: Bool) -> ConnectOutcome {
        guard case .connecting(let fromBound) = lifecycle else { return .stale }
        lifecycle = succeeded ? .connected : (fromBound ? .bound : .idle)
        return succeeded ? .connected : .failed
    }

    /// A multicast join or leave is asked: `nil` to go ahead, or why not.
    func multicastAsked() -> Refusal? {
        switch lifecycle {
        case .bound: return nil
        case .idle, .closed: return .multicastUnbound
        case .connecting, .connected: return .multicastConnected
        }
    }

    /// The socket closes: everything of it goes at once (one assignment).
    mutating func close() {
        self = DatagramState(lifecycle: .closed)
    }

    // MARK: Receiving transitions

    /// What asking to receive leads to.
    enum ReceiveAction: Equatable {
        /// Already receiving so: nothing changes.
        case unchanged
        /// Update the interest, and deliver any datagrams held back by a pause.
        case start
        case refuse(Refusal)
    }

    /// ``GCDAsyncUdpSocket/receiveOnce()`` (`.once`) or ``GCDAsyncUdpSocket/beginReceiving()`` (`.continuous`);
    /// `hasDescriptor`: the socket has one to read (bound, connected, or created by a send or an option).
    mutating func receiveAsked(_ mode: Receiving, hasDescriptor: Bool) -> ReceiveAction {
        precondition(mode == .once || mode == .continuous)
        if receiving == mode { return .unchanged }
        guard hasDescriptor else { return .refuse(.noDescriptor) }
        receiving = mode
        return .start
    }

    /// ``GCDAsyncUdpSocket/pauseReceiving()``: true if it stopped anything (update the interest).
    mutating func pauseAsked() -> Bool {
        guard isReceiving else { return false }
        receiving = .paused
        return true
    }

    /// A datagram was delivered: a single receive is done.
    mutating func delivered() {
        if receiving == .once { receiving = .off }
    }

    // MARK: Send transitions

    /// The front send hit `EAGAIN` (`.writable`), `ENOBUFS` (`.noBuffers`) or went to the filter's queue (`.filter`).
    mutating func sendWaits(for wait: SendWait) {
        precondition(sendWait == .none && wait != .none)
        sendWait = wait
    }

    /// What the send waited for came (EPOLLOUT, the retry timer, the filter's answer): true if the send
    /// was waiting for exactly that (pump).
    mutating func sendWaitEnded(_ wait: SendWait) -> Bool {
        guard sendWait == wait, wait != .none else { return false }
        sendWait = .none
        return true
    }

    /// A `UDP_SEGMENT` send was refused: send one datagram per message from now on.
    mutating func segmentationWasRefused() {
        segmentationRefused = true
    }

    // MARK: Ending transitions

    /// ``GCDAsyncUdpSocket/closeAfterSending()``: true to close now (nothing queued and no pump running).
    mutating func closeAfterSendsAsked(sendsQueued: Bool, pumping: Bool) -> Bool {
        ending = .afterSends
        return !sendsQueued && !pumping
    }

    /// The pump ended: true to close now (the queue a `closeAfterSending()` waits for is empty).
    func pumpEnded(sendsQueued: Bool) -> Bool {
        ending == .afterSends && !sendsQueued
    }
}
