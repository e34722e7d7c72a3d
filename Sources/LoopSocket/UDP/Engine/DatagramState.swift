/// A UDP socket's state on its loop: four small enums and a flag, changed only by ``handle(_:)`` (its events
/// and actions are in DatagramState+Transitions.swift), which returns what the engine must do (an ``Action``) rather than
/// doing it. What is a fact of the descriptors (whether any exists) is read from them and not stored here;
/// how the pump is scheduled is ``PumpState``'s.
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
    enum Refusal: Equatable, CaseIterable {
        case alreadyBound
        case bindAfterConnect
        case alreadyConnected
        case noDescriptor
        case multicastUnbound
        case multicastConnected
    }

    private(set) var lifecycle = Lifecycle.idle
    private(set) var receiving = Receiving.off
    private(set) var ending = Ending.none
    private(set) var sendWait = SendWait.none
    /// A `UDP_SEGMENT` send was refused by the route: one datagram per message from now on (until closed).
    private(set) var segmentationRefused = false

    /// A socket in this state (a new one with the defaults; the transition tests and the diagram's table
    /// start from the others).
    init(lifecycle: Lifecycle = .idle, receiving: Receiving = .off, ending: Ending = .none, sendWait: SendWait = .none,
         segmentationRefused: Bool = false) {
        self.lifecycle = lifecycle
        self.receiving = receiving
        self.ending = ending
        self.sendWait = sendWait
        self.segmentationRefused = segmentationRefused
    }

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

    // MARK: The transitions

    /// Handles `event`: the state moves on, and the engine does what the action says.
    @inline(__always)
    mutating func handle(_ event: Event) -> Action {
        switch event {
        case .bindAsked:
            switch lifecycle {
            case .idle, .closed: return .proceed
            case .bound: return .refuse(.alreadyBound)
            case .connecting, .connected: return .refuse(.bindAfterConnect)
            }
        case .bound:
            switch lifecycle {
            case .idle, .closed: lifecycle = .bound
            case .connecting(fromBound: false): lifecycle = .connecting(fromBound: true)
            case .bound, .connecting, .connected: return .none
            }
            return .proceed
        case .connectAsked:
            switch lifecycle {
            case .idle, .closed: lifecycle = .connecting(fromBound: false)
            case .bound: lifecycle = .connecting(fromBound: true)
            case .connecting, .connected: return .refuse(.alreadyConnected)
            }
            return .proceed
        case .connected:
            guard case .connecting = lifecycle else { return .none }
            lifecycle = .connected
            return .reportConnected
        case .connectFailed:
            guard case .connecting(let fromBound) = lifecycle else { return .none }
            lifecycle = fromBound ? .bound : .idle
            return .reportConnectFailed
        case .multicastAsked:
            switch lifecycle {
            case .bound: return .proceed
            case .idle, .closed: return .refuse(.multicastUnbound)
            case .connecting, .connected: return .refuse(.multicastConnected)
            }
        case .receiveAsked(let mode, let hasDescriptor):
            let wanted: Receiving = mode == .once ? .once : .continuous
            if receiving == wanted { return .none }
            guard hasDescriptor else { return .refuse(.noDescriptor) }
            receiving = wanted
            return .startReceiving
        case .pauseAsked:
            guard isReceiving else { return .none }
            receiving = .paused
            return .stopReceiving
        case .delivered:
            guard receiving == .once else { return .none }
            receiving = .off
            return .proceed
        case .sendWaits(let wait):
            guard sendWait == .none, wait != .none else { return .none }
            sendWait = wait
            return .proceed
        case .sendWaitEnded(let wait):
            guard sendWait == wait, wait != .none else { return .none }
            sendWait = .none
            return .pump
        case .segmentationRefused:
            guard !segmentationRefused else { return .none }
            segmentationRefused = true
            return .proceed
        case .closeAfterSendsAsked(let sendsQueued, let pumping):
            ending = .afterSends
            return sendsQueued || pumping ? .proceed : .close
        case .pumpEnded(let sendsQueued):
            return ending == .afterSends && !sendsQueued ? .close : .none
        case .closed:
            self = DatagramState(lifecycle: .closed)
            return .tearDown
        }
    }
}
