import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc
import Synchronization

/// The datagram engine: one UDP socket's loop-confined machinery under ``GCDAsyncUdpSocket`` (a subclass,
/// which adds the delegate), as ``ConnectionEngine`` is TCP's.
///
/// It owns the descriptors (one per IP family, `DatagramChannel`), the send queue, the receive batches,
/// the filters, the timers and the pump, and knows nothing of the face: what it has to tell goes through the
/// sink methods (below, and `DatagramEvent`), which the face overrides. Its state is one
/// `DatagramState` value changed by transitions. Its one public member is ``eventLoop``, and it has no
/// public initialiser: use ``GCDAsyncUdpSocket`` or ``AsyncUDPSocket``.
///
/// A base class rather than an object the face holds for the reasons ``ConnectionEngine`` gives: no second
/// object, no pointer chase per datagram, and one lifetime (the loop holds the channels, the channels hold
/// the socket, until it closes). Swift requires an `open` class's superclass to be `open` too.
open class DatagramEngine: @unchecked Sendable {
    // Thread-safety: `eventLoop` is immutable; `shared` is a mutex for what any thread may read or set
    // (configuration, the status the getters report); everything else is confined to `eventLoop`'s thread.

    /// The loop this socket belongs to for life.
    public let eventLoop: EventLoop
    let shared: Locked<SharedState>

    // MARK: Loop-confined state (unchecked exclusivity: loop thread only, as in ConnectionEngine)

    @exclusivity(unchecked) var state = DatagramState()
    /// How the pump of sends and held datagrams is scheduled (``PumpScheduled``, shared with TCP's engine).
    /// `final`, as `cachedContext`: reached through the protocol's conformance, a plain field access.
    @exclusivity(unchecked) final var pumpState: PumpState = []
    @exclusivity(unchecked) var channel4: DatagramChannel?
    @exclusivity(unchecked) var channel6: DatagramChannel?
    @exclusivity(unchecked) var peerAddress: SocketAddress?
    /// Changes at every close: work started before it (resolution, filters, timers) checks it.
    @exclusivity(unchecked) var generation: UInt32 = 0
    @exclusivity(unchecked) var sends = OpQueue<SendOp>()
    @exclusivity(unchecked) var queuedSendBytes = 0
    @exclusivity(unchecked) var nextSendID: UInt32 = 0
    /// Sends that failed before they were queued (too large, queue full), to report in the next iteration.
    @exclusivity(unchecked) var failedAtOnce: [(tag: Int, error: DatagramError)] = []
    /// Host names resolved for queued sends, by send id.
    @exclusivity(unchecked) var resolutions: [UInt32: Result<[SocketAddress], DatagramError>] = [:]
    @exclusivity(unchecked) var sendTimer = TimerID.invalid
    @exclusivity(unchecked) var retryTimer = TimerID.invalid
    @exclusivity(unchecked) var sendFilter: FilterSlot<SendFilter>?
    @exclusivity(unchecked) var receiveFilter: FilterSlot<ReceiveFilter>?
    /// Receive-filter calls out on their queue.
    @exclusivity(unchecked) var pendingFilterOperations = 0
    /// Datagrams received in a batch after receiving was paused mid-batch: delivered first when it resumes.
    @exclusivity(unchecked) var held: [ReceivedDatagram] = []
    @exclusivity(unchecked) final var cachedContext: LoopContext?
    /// The loop's copy of ``SharedState/configuration``, read per datagram without the lock; every change
    /// reaches it through the loop, in order with the sends queued after it.
    @exclusivity(unchecked) var loopConfiguration = Configuration()
    /// Messages that left carrying a run of datagrams (GSO) and received messages that held one (GRO):
    /// what tests and benchmarks read to see offload at work.
    @exclusivity(unchecked) var segmentedMessagesSent = 0
    @exclusivity(unchecked) var coalescedMessagesReceived = 0
    /// Datagrams handed to the sink's queue and not yet delivered there. Counted up on the loop, down on
    /// the queue: past ``maxDeliveriesInFlight`` the loop stops reading, so a slow queue leaves the excess
    /// in the kernel's socket buffer (which drops it) instead of queueing without bound in memory.
    let deliveriesInFlight = Atomic<Int>(0)

    /// The bound on ``deliveriesInFlight`` (and on receive-filter calls out on their queue); reading resumes
    /// once half of them have been delivered.
    static let maxDeliveriesInFlight = 1024

    /// An engine on `loop`. `@usableFromInline` but not public, as ``ConnectionEngine``'s: a designated
    /// initialiser clients cannot see would keep a subclass of `GCDAsyncUdpSocket` in another module from
    /// inheriting its convenience initialisers.
    @usableFromInline
    init(loop: EventLoop) {
        self.eventLoop = loop
        self.shared = Locked(SharedState())
    }

    // MARK: The sink
    //
    // What the engine tells the face, overridden by it (``GCDAsyncUdpSocket`` turns them into delegate
    // callbacks, inline or on its delegate queue). Declared here, in the class body, because only these can
    // be overridden; the defaults are an engine with no sink. All are called on the loop.

    /// A datagram arrived (the hot path: no closure, no enum).
    func sinkDidReceive(_ data: Data, from address: Data, context: Any?) {}

    /// A send left (the hot path).
    func sinkDidSend(tag: Int) {}

    /// One of the rarer events (``DatagramEvent``).
    func sinkReport(_ event: DatagramEvent) {}
}

/// What the engine tells its sink besides received and sent datagrams.
enum DatagramEvent {
    case didNotSend(tag: Int, DatagramError)
    case didNotReceive(DatagramError)
    case connected(address: Data)
    case didNotConnect(DatagramError)
    /// The socket closed (reported only if it had a descriptor): the last event of its descriptors.
    case closed(DatagramError?)
}

// MARK: - State shared with other threads

extension DatagramEngine {
    /// What any thread may read or set, under `shared`'s mutex.
    struct SharedState {
        var configuration = Configuration()
        /// What the getters report, as the loop last published it (``DatagramEngine/publishStatus()``).
        var status = Status()
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
        let status = Status(fd4: channel4?.fd ?? -1, fd6: channel6?.fd ?? -1, connected: state.isConnected)
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

    /// Takes a configuration the face changed (any thread's, in order with that thread's sends). Loop only.
    func adoptConfiguration(_ configuration: Configuration) {
        loopConfiguration = configuration
    }

    /// Turns GRO on or off on the descriptors as the latest setting says, whichever thread made it. Loop only.
    func applySegmentationOffload() {
        let on = loopConfiguration.segmentationOffload
        channel4?.setCoalescing(on)
        channel6?.setCoalescing(on)
    }

    /// Whether the socket has a descriptor (GCDAsyncUdpSocket's `kDidCreateSockets`).
    var hasChannels: Bool { channel4 != nil || channel6 != nil }
}

extension DatagramEngine: PumpScheduled, GenerationChecked {}

extension DatagramEngine {
    /// The send filter's shape (the face's public `GCDAsyncUdpSocketSendFilterBlock` is the same type):
    /// false drops the datagram, which is then reported as sent.
    typealias SendFilter = (_ data: Data, _ address: Data, _ tag: Int) -> Bool
    /// The receive filter's shape (the face's `GCDAsyncUdpSocketReceiveFilterBlock`): false drops the
    /// datagram; what it stores in `context` is delivered with it.
    typealias ReceiveFilter = (_ data: Data, _ address: Data, _ context: UnsafeMutablePointer<AnyObject?>) -> Bool
}

/// A filter with where it runs: inline on the loop (`queue == nil`) or on a queue.
struct FilterSlot<Block> {
    var block: Block
    var queue: DispatchQueue?
}
