import CEpollShim
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc
import Synchronization

/// The connection engine: one TCP (or Unix-domain) socket's loop-confined state machine, under both faces,
/// ``GCDAsyncSocket`` (a subclass, which adds the delegate) and ``AsyncSocket`` (which drives a
/// `GCDAsyncSocket` with a handler of its own).
///
/// It owns the descriptor, the read and write queues, the prebuffer, the timers and the pump, and knows
/// nothing of either face: what it has to tell goes through the sink methods (below, and `ConnectionReport`),
/// which the face overrides. Its one public member is ``eventLoop`` (every socket's), and it has no public
/// initialiser: use ``GCDAsyncSocket`` or ``AsyncSocket``.
///
/// Why a base class and not an object of its own that the face holds: an idle connection is about 400 bytes
/// of memory, and a second object would add its header and a pointer each way (16 to 32 bytes per
/// connection) and a pointer chase to every call. Swift requires an `open` class's superclass to be `open` too, hence the
/// `open` here; with only internal initialisers, nothing outside this module can make or subclass one.
open class ConnectionEngine: @unchecked Sendable {
    // Thread-safety: `eventLoop` is immutable; `sharedState` is read and written only under
    // `sharedLock` (``withSharedState(_:)``), for what any thread may read or set (configuration, the
    // connection snapshot the getters return, the face's delegate); everything else is confined to
    // `eventLoop`'s thread.
    //
    // One heap object per connection: the shared state, its lock and the first queued read live in this
    // object rather than in objects of their own (a `Locked` box and the read queue's storage), which saved
    // an idle connection two heap chunks and their headers and rounding: 48 bytes (docs/benchmarks.md, "Idle
    // memory per connection"). The order of the fields packs the one-byte ones into the tails of the 21-byte
    // op queues: a `GCDAsyncSocket` is 344 bytes, a 352-byte chunk (FootprintTests holds it there; 8 bytes
    // more would make it a 368-byte one).

    /// The loop this socket belongs to for life.
    public let eventLoop: EventLoop

    // MARK: Loop-confined state
    //
    // `@exclusivity(unchecked)`: these are touched only on the loop's thread, one pump at a time, and a
    // runtime exclusivity check costs about 230 instructions (a thread-local lookup), which on the echo path
    // was a third of all the work per round trip (callgrind, see docs/benchmarks.md). The tests run the same
    // code with the checks of everything else still on.

    /// The TLS session's layer: there exactly while the state's TLS phase is `handshaking`, `awaitingTrust`
    /// or `established` (made by `startHandshake`'s action, dropped by `tearDown`'s); nil over plaintext.
    @exclusivity(unchecked) var tlsLayer: TLSConnection?
    @exclusivity(unchecked) var config: Configuration
    /// The read queue; its storage is ``readSlot`` while it holds one read or none.
    @exclusivity(unchecked) var reads = OpQueue<ReadOp>()
    /// `final`: the shared scheduler (`PumpScheduled`) reaches it through its conformance, which is then a
    /// plain field access rather than a call to a class accessor.
    @exclusivity(unchecked) final var pumpState: PumpState = []
    @exclusivity(unchecked) var readiness: Readiness = []
    @exclusivity(unchecked) var asking: TimeoutQuestions = []
    @exclusivity(unchecked) var nextOpID: UInt32 = 0
    @exclusivity(unchecked) var readTimerOp: UInt32 = .max
    @exclusivity(unchecked) var writes = OpQueue<WriteOp>()
    @exclusivity(unchecked) var traits: Traits = []
    /// `recv` calls left before this wakeup's turn ends (``SocketOptions/maxReadsPerWakeup``, reset by
    /// `handleIO`): one flooding peer cannot keep the loop from its other descriptors.
    @exclusivity(unchecked) var readBudget = Int16(SocketOptions().maxReadsPerWakeup)
    /// Bytes received but not yet consumed by a read (GCDAsyncSocket's prebuffer), from `pendingStart`.
    @exclusivity(unchecked) var pending: [UInt8] = []
    @exclusivity(unchecked) var pendingStart = 0
    @exclusivity(unchecked) var queuedWriteBytes = 0
    /// Connecting and listening state, allocated by the first connect or listen (``DialState``): an
    /// accepted connection never needs it.
    @exclusivity(unchecked) var dial: DialState?
    @exclusivity(unchecked) var cachedContext: LoopContext?
    @exclusivity(unchecked) var readTimer = TimerID.invalid
    @exclusivity(unchecked) var writeTimer = TimerID.invalid
    @exclusivity(unchecked) var writeTimerOp: UInt32 = .max
    @exclusivity(unchecked) var fd: Int32 = -1
    /// The connection's state (Engine/ConnectionState.swift), changed only by its transitions.
    @exclusivity(unchecked) var connectionState = ConnectionState.idle

    // MARK: Shared state

    /// The lock over ``sharedState``: a 4-byte futex lock (`cepoll_lock`, see `Locked`) in an `Atomic`'s
    /// storage, which is never copied or moved and so has an address for the C lock to work on.
    let sharedLock = Atomic<UInt32>(0)
    /// What any thread may read or set: only inside ``withSharedState(_:)``. (`@exclusivity(unchecked)`:
    /// the lock orders the accesses; `final`: accessed in place.)
    @exclusivity(unchecked) final var sharedState: SharedState

    // MARK: The inline read slot

    /// Room for one ``ReadOp``, the read queue's storage while it holds one read or none (an idle
    /// connection's one read allocates nothing). Raw words, not a `ReadOp?`: the queue initialises and
    /// destroys the operation in it, as in any storage of its own. `final`: its address is the field's own.
    @exclusivity(unchecked) final var readSlot: ReadSlot = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    typealias ReadSlot = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    /// An engine on `loop`, or on the next loop of `group`, or of the shared default group, with
    /// `configuration` (an accepted connection's is its listener's: set here once, rather than the default
    /// first and then replaced, two retains and releases of every accept).
    ///
    /// `@usableFromInline` but not public: a designated initialiser clients cannot see would keep a subclass
    /// of `GCDAsyncSocket` in another module from inheriting its convenience initialisers
    /// (`init(socketQueue:)` and the rest), as Swift cannot tell that the subclass covers them all.
    @usableFromInline
    init(loop: EventLoop?, group: EventLoopGroup?, configuration: Configuration) {
        config = configuration
        sharedState = SharedState(configuration: configuration)
        let group = group ?? (loop == nil ? Self.fallbackGroup : nil)
        self.eventLoop = loop ?? group!.next()
        if let group { dial = DialState(group: group) }  // set before any other thread sees the socket
        reads.useInlineSlot(inlineReadSlot)
    }

    /// ``readSlot`` as the read queue's storage. The field of a class instance is addressed in place (a
    /// `final` stored property with no observers), so the pointer stays valid as long as the object.
    final var inlineReadSlot: UnsafeMutablePointer<ReadOp> {
        precondition(MemoryLayout<ReadOp>.size <= MemoryLayout<ReadSlot>.size
            && MemoryLayout<ReadOp>.alignment <= MemoryLayout<ReadSlot>.alignment)
        return withUnsafeMutablePointer(to: &readSlot) { UnsafeMutableRawPointer($0).bindMemory(to: ReadOp.self, capacity: 1) }
    }

    /// Runs `body` with the shared state, under the socket's lock. Any thread.
    @inline(__always)
    final func withSharedState<Result, Failure: Error>(
        _ body: (inout SharedState) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withUnsafePointer(to: sharedLock) { (lock) throws(Failure) -> Result in
            let word = UnsafeMutableRawPointer(mutating: lock).assumingMemoryBound(to: cepoll_lock_t.self)
            cepoll_lock(word)
            defer { cepoll_unlock(word) }
            return try body(&sharedState)
        }
    }

    /// GCDAsyncSocket closes its socket when it is deallocated, and ported code stops a server by releasing
    /// its listening socket. The loop holds a connected socket while its descriptor is open, so only a
    /// listening socket gets here open: its descriptors belong to handlers that do not keep it alive, and
    /// are closed on the loop (a Unix socket's file removed).
    deinit {
        // A socket with no dial state (one that never listened, connected or had a group: every accepted
        // connection) has no listeners: no lock to take. Nothing else references the socket any more, so reading the
        // loop's field here is safe.
        guard dial != nil else { return }
        let open = withSharedState { $0.openListeners }
        guard !open.handlers.isEmpty else { return }
        let loop = eventLoop
        let close = UncheckedSendable {
            for handler in open.handlers { handler.close(on: loop) }
            if let path = open.unixPath { unlink(path) }
        }
        if loop.inEventLoop {
            close.value()
        } else {
            try? loop.execute { close.value() }
        }
    }

    /// The group sockets use when given neither a loop nor a group: one loop per core, started on first use.
    static var fallbackGroup: EventLoopGroup { DefaultGroup.group }

    private enum DefaultGroup {
        static let group: EventLoopGroup = {
            do {
                return try EventLoopGroup(name: "loopsocket")
            } catch {
                fatalError("LoopSocket: cannot start the default event loop group: \(error)")
            }
        }()
    }

    /// What only a connecting or listening socket, or one made for a group, holds, out of line. Loop only.
    final class DialState {
        /// The group accepted sockets are spread over (the loop's own group, or only this loop): a socket
        /// made without a loop, or with a group. An accepted connection has none, nor any other dial state.
        let group: EventLoopGroup?
        // Unchecked like the socket's own loop-confined fields: touched only on the socket's loop.
        @exclusivity(unchecked) var connectTimer = TimerID.invalid
        @exclusivity(unchecked) var listeners: [ListenHandler] = []
        @exclusivity(unchecked) var connecting: ConnectAttempts?
        @exclusivity(unchecked) var unixListenPath: String?

        init(group: EventLoopGroup?) {
            self.group = group
        }
    }

    /// The group accepted sockets are spread over; nil: this loop only. Loop only.
    var group: EventLoopGroup? { dial?.group }

    /// The ``DialState``, allocated on first use. Loop only.
    private var dialState: DialState {
        if let dial { return dial }
        let state = DialState(group: nil)
        dial = state
        return state
    }

    var connectTimer: TimerID {
        get { dial?.connectTimer ?? .invalid }
        set { if dial != nil || newValue != .invalid { dialState.connectTimer = newValue } }
    }
    var listeners: [ListenHandler] {
        get { dial?.listeners ?? [] }
        set { if dial != nil || !newValue.isEmpty { dialState.listeners = newValue } }
    }
    var connecting: ConnectAttempts? {
        get { dial?.connecting }
        set { if dial != nil || newValue != nil { dialState.connecting = newValue } }
    }
    var unixListenPath: String? {
        get { dial?.unixListenPath }
        set { if dial != nil || newValue != nil { dialState.unixListenPath = newValue } }
    }

    // MARK: The sink
    //
    // What the engine tells whoever consumes the connection, overridden by the face (``GCDAsyncSocket``
    // turns them into delegate callbacks, inline or on its delegate queue, or hands them to an
    // ``AsyncSocket``'s handler): the two hot events, and one report for everything else (as the UDP
    // engine's sink). Declared here, in the class body, because only these can be overridden; the defaults
    // are an engine with no sink. All are called on the loop.

    /// A read completed (the hot path: no closure, no enum).
    func sinkDidRead(_ data: Data, tag: Int) {}

    /// A write completed.
    func sinkDidWrite(tag: Int) {}

    /// Everything else (``ConnectionReport``). With no sink, an accepted descriptor still becomes a
    /// connection (of its own, with no sink) and a question gets the answer of nobody to ask.
    func sinkReport(_ event: ConnectionReport) {
        switch event {
        case .accepted(let accepted):
            let connection = ConnectionEngine(loop: accepted.loop, group: nil, configuration: config)
            setUpAccepted(connection, fd: accepted.fd, isUnix: accepted.isUnix)
            connection.startAdopted()
        case .trustAsked(_, let decide):
            decide(false)
        default:
            break
        }
    }

    /// Not an event but the face's translation of the engine's errors: what an `async` waiter the engine
    /// resumes itself (a read's continuation) throws for `error`.
    func sinkError(_ error: ConnectionError) -> any Error { error }
}
