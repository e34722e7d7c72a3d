import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc
import Synchronization

/// A UDP socket with GCDAsyncUdpSocket's API, pinned to one event loop.
///
/// Sends are queued with tags and timeouts and reported through the delegate; datagrams arrive one
/// `receiveOnce()` at a time or continuously after `beginReceiving()`, as with CocoaAsyncSocket's
/// GCDAsyncUdpSocket. Unlike it, every socket lives on one `EventLoop` for life: its I/O, timers and state
/// are handled on that loop's thread and, when it has no `delegateQueue`, its delegate is called right
/// there. Receiving drains up to ``receiveBatchSize()`` datagrams per readiness event with one `recvmmsg`,
/// and the sends queued meanwhile leave together with `sendmmsg`. Methods may be called from any thread.
///
/// The calls that return once the loop has acted (binding, connecting, options, ``receiveOnce()`` and
/// ``beginReceiving()``, ``close()``, `synchronouslySetDelegate…`, ``perform(_:)``) run inline on the
/// socket's loop and wait for it from any other thread, another event loop's included, as
/// GCDAsyncUdpSocket's `dispatch_sync` onto its socket queue does. Except when waiting could deadlock:
/// called on loop A's thread while the socket's loop waits, itself or through other loops, for A (the
/// process keeps a record of which loop waits for which). Then the calls that throw throw `badConfigError`
/// at once, doing nothing; ``close()`` and `synchronouslySetDelegate…` queue the change and return;
/// ``perform(_:)`` stops the process. Getters never wait: they read what the loop publishes.
///
/// ```swift
/// let socket = GCDAsyncUdpSocket(delegate: echo, delegateQueue: nil)
/// try socket.bind(toPort: 0, interface: "127.0.0.1")
/// try socket.beginReceiving()
/// print("bound to", socket.localPort())
/// ```
open class GCDAsyncUdpSocket: @unchecked Sendable {
    // Thread-safety: `eventLoop` is immutable; `shared` is a mutex for what any thread may read or set
    // (delegate, configuration, user data, the status the getters report); everything else is confined to
    // `eventLoop`'s thread.

    /// The loop this socket belongs to for life.
    public let eventLoop: EventLoop
    let shared: Locked<SharedState>

    // MARK: Loop-confined state (unchecked exclusivity: loop thread only, as in GCDAsyncSocket)

    @exclusivity(unchecked) weak var loopDelegate: (any GCDAsyncUdpSocketDelegate)?
    @exclusivity(unchecked) var loopDelegateQueue: DispatchQueue?
    @exclusivity(unchecked) var flags: Flags = []
    /// How the pump of sends and held datagrams is scheduled (shared with TCP's engine).
    @exclusivity(unchecked) var pumpState: PumpState = []
    @exclusivity(unchecked) var channel4: DatagramChannel?
    @exclusivity(unchecked) var channel6: DatagramChannel?
    @exclusivity(unchecked) var peerAddress: SocketAddress?
    /// Changes at every close: work started before it (resolution, filters, deferred pumps) checks it.
    @exclusivity(unchecked) var generation: UInt32 = 0
    @exclusivity(unchecked) var sends = OpQueue<SendOp>()
    @exclusivity(unchecked) var queuedSendBytes = 0
    @exclusivity(unchecked) var nextSendID: UInt32 = 0
    /// Host names resolved for queued sends, by send id.
    @exclusivity(unchecked) var resolutions: [UInt32: Result<[SocketAddress], GCDAsyncUdpSocketError>] = [:]
    @exclusivity(unchecked) var sendTimer = TimerID.invalid
    @exclusivity(unchecked) var retryTimer = TimerID.invalid
    @exclusivity(unchecked) var sendFilter: FilterSlot<GCDAsyncUdpSocketSendFilterBlock>?
    @exclusivity(unchecked) var receiveFilter: FilterSlot<GCDAsyncUdpSocketReceiveFilterBlock>?
    /// Receive-filter calls out on their queue.
    @exclusivity(unchecked) var pendingFilterOperations = 0
    /// Datagrams received in a batch after receiving was paused mid-batch: delivered first when it resumes.
    @exclusivity(unchecked) var held: [ReceivedDatagram] = []
    @exclusivity(unchecked) var cachedContext: LoopContext?
    /// The loop's copy of ``SharedState/configuration``, read per datagram without the lock; every change
    /// reaches it through the loop, in order with the sends queued after it.
    @exclusivity(unchecked) var loopConfiguration = Configuration()
    /// Messages that left carrying a run of datagrams (GSO) and received messages that held one (GRO):
    /// what tests and benchmarks read to see offload at work.
    @exclusivity(unchecked) var segmentedMessagesSent = 0
    @exclusivity(unchecked) var coalescedMessagesReceived = 0
    /// Datagrams handed to the delegate queue and not yet delivered there. Counted up on the loop, down on
    /// the queue: past ``maxDeliveriesInFlight`` the loop stops reading, so a slow delegate queue leaves the
    /// excess in the kernel's socket buffer (which drops it) instead of queueing without bound in memory.
    let deliveriesInFlight = Atomic<Int>(0)

    /// The bound on ``deliveriesInFlight`` (and on receive-filter calls out on their queue); reading resumes
    /// once half of them have been delivered.
    static let maxDeliveriesInFlight = 1024

    /// A socket on `loop`, or on the next loop of `group`, or of ``GCDAsyncSocket/defaultGroup``.
    ///
    /// - Parameters:
    ///   - delegate: receives the callbacks (held weakly, as GCDAsyncUdpSocket does).
    ///   - delegateQueue: where callbacks run; `nil` runs them on the socket's event loop (fastest).
    ///   - loop: the loop to pin the socket to.
    ///   - group: when `loop` is nil, the socket takes `group.next()`.
    public init(
        delegate: (any GCDAsyncUdpSocketDelegate)? = nil, delegateQueue: DispatchQueue? = nil,
        loop: EventLoop? = nil, group: EventLoopGroup? = nil
    ) {
        self.eventLoop = loop ?? (group ?? GCDAsyncSocket.defaultGroup).next()
        self.shared = Locked(SharedState(delegate: delegate, delegateQueue: delegateQueue))
        self.loopDelegate = delegate
        self.loopDelegateQueue = delegateQueue
    }

    /// GCDAsyncUdpSocket's designated initialiser; the socket queue is ignored (the event loop takes its place).
    public convenience init(delegate: (any GCDAsyncUdpSocketDelegate)?, delegateQueue: DispatchQueue?, socketQueue: DispatchQueue?) {
        self.init(delegate: delegate, delegateQueue: delegateQueue)
    }

    /// A socket without a delegate yet; the socket queue is ignored.
    public convenience init(socketQueue: DispatchQueue?) {
        self.init(delegate: nil, delegateQueue: nil)
    }

    /// A socket without a delegate yet.
    public convenience init() {
        self.init(delegate: nil, delegateQueue: nil)
    }

    /// Runs one of the calls that throw (bind, connect, options, receiving) on the loop and waits for its
    /// outcome, which only the loop can give, from any thread, another event loop's included; the loop being
    /// shut down is a `badConfigError`.
    ///
    /// Except when that wait could deadlock: called on loop A's thread while this socket's loop waits, itself
    /// or through other loops, for A (see `LoopWaits`), it does nothing and throws `badConfigError` at once.
    func throwingOnLoop(_ call: String, _ body: () throws(GCDAsyncUdpSocketError) -> Void) throws(GCDAsyncUdpSocketError) {
        let outcome = waitForLoop { () -> GCDAsyncUdpSocketError? in
            do throws(GCDAsyncUdpSocketError) { try body() } catch { return error }
            return nil
        }
        switch outcome {
        case .ran(nil): return
        case .ran(let error?): throw error
        case .loopShutDown: throw GCDAsyncUdpSocketError.loopShutDown
        case .wouldDeadlock(let caller): throw GCDAsyncUdpSocketError.wouldDeadlock(call, caller: caller, socketLoop: eventLoop)
        }
    }
}

extension GCDAsyncUdpSocketError {
    /// `call`, made on `caller`'s thread, was not made: it would wait for `socketLoop`, which waits (itself or
    /// through other loops) for `caller`, and neither would ever go on.
    static func wouldDeadlock(_ call: String, caller: EventLoop, socketLoop: EventLoop) -> GCDAsyncUdpSocketError {
        GCDAsyncUdpSocketError(.badConfigError, """
            \(call) was not made: it was called on event loop '\(caller.name)''s thread and would wait for this \
            socket's loop '\(socketLoop.name)', which is waiting (itself or through other loops) for '\(caller.name)': \
            the call would deadlock with the other loop. Call it on the socket's loop (eventLoop.execute, or \
            create the socket with loop: the loop that uses it) or off the loops.
            """)
    }
}

// MARK: - State

extension GCDAsyncUdpSocket {
    struct Flags: OptionSet {
        let rawValue: UInt32
        /// At least one descriptor exists (GCDAsyncUdpSocket's `kDidCreateSockets`).
        static let didCreateSockets = Flags(rawValue: 1 << 0)
        /// Bound explicitly, or implicitly by a send or a connect.
        static let didBind = Flags(rawValue: 1 << 1)
        /// A connect is resolving its host.
        static let connecting = Flags(rawValue: 1 << 2)
        static let didConnect = Flags(rawValue: 1 << 3)
        static let receiveOnce = Flags(rawValue: 1 << 4)
        static let receiveContinuous = Flags(rawValue: 1 << 5)
        static let closeAfterSends = Flags(rawValue: 1 << 6)
        /// The last send hit `EAGAIN`: wait for EPOLLOUT.
        static let sendBlocked = Flags(rawValue: 1 << 7)
        /// The last send hit `ENOBUFS`: a timer retries it (EPOLLOUT would not come: the buffer has room).
        static let sendRetryPending = Flags(rawValue: 1 << 8)
        /// The front send is out on the send filter's queue.
        static let sendFilterPending = Flags(rawValue: 1 << 9)
        /// A `UDP_SEGMENT` send failed: this socket sends one datagram per message from now on.
        static let segmentationRefused = Flags(rawValue: 1 << 14)
    }

    /// What any thread may read or set, under `shared`'s mutex.
    struct SharedState: @unchecked Sendable {
        weak var delegate: (any GCDAsyncUdpSocketDelegate)?
        var delegateQueue: DispatchQueue?
        var userData: Any?
        var configuration = Configuration()
        /// What the getters report, as the loop last published it (``GCDAsyncUdpSocket/publishStatus()``).
        var status = Status()

        init(delegate: (any GCDAsyncUdpSocketDelegate)?, delegateQueue: DispatchQueue?) {
            self.delegate = delegate
            self.delegateQueue = delegateQueue
        }
    }

    /// The socket's descriptors and whether it is connected, published by the loop when they change (a
    /// descriptor made or closed, a connect, a close: never per datagram) for the getters, which read it
    /// under the lock on the calling thread and so never wait for the loop. Addresses are not kept: the
    /// getters ask the kernel for them under the lock, and the loop withdraws a descriptor here before it
    /// closes it, so a getter never asks a closed, or reused, one.
    struct Status {
        var fd4: Int32 = -1
        var fd6: Int32 = -1
        var connected = false

        /// The descriptor of `family` (`AF_INET`, `AF_INET6`), or of either (the IPv4 one first) for nil.
        func fd(_ family: Int32?) -> Int32 {
            switch family {
            case AF_INET?: return fd4
            case AF_INET6?: return fd6
            default: return fd4 >= 0 ? fd4 : fd6
            }
        }
    }

    /// Publishes the loop's descriptors and connection for the getters. Loop only; called where they change.
    func publishStatus() {
        let status = Status(fd4: channel4?.fd ?? -1, fd6: channel6?.fd ?? -1, connected: flags.contains(.didConnect))
        shared.withLock { $0.status = status }
    }

    /// GCDAsyncUdpSocket's settings, plus the batching and backpressure ones this library adds.
    struct Configuration {
        var ipv4Enabled = true
        var ipv6Enabled = true
        var preference = Preference.ipv4
        var maxReceive4: UInt16 = 65_535
        var maxReceive6: UInt32 = 65_535
        var maxSend: UInt16 = 65_535
        var receiveBatch = 32
        var maxQueuedSendBytes = 1 << 20
        /// UDP GSO on send and GRO on receive, where the kernel has them.
        var segmentationOffload = true
    }

    enum Preference {
        case ipv4, ipv6, neutral
    }

    /// A datagram received but not yet delivered.
    struct ReceivedDatagram {
        var data: Data
        var address: Data
    }
}

/// GCDAsyncUdpSocket's receive filter: return false to drop the datagram; anything stored in `context` is
/// passed to `udpSocket(_:didReceive:fromAddress:withFilterContext:)`.
public typealias GCDAsyncUdpSocketReceiveFilterBlock = (_ data: Data, _ address: Data, _ context: AutoreleasingUnsafeMutablePointer<AnyObject?>) -> Bool

/// GCDAsyncUdpSocket's send filter: return false to drop the datagram (it is then reported as sent).
public typealias GCDAsyncUdpSocketSendFilterBlock = (_ data: Data, _ address: Data, _ tag: Int) -> Bool

/// A filter with where it runs: inline on the loop (`queue == nil`) or on a queue.
struct FilterSlot<Block> {
    var block: Block
    var queue: DispatchQueue?
}

extension GCDAsyncUdpSocket: DelegatingSocket, PumpScheduled {}
