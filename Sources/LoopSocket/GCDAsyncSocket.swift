import CEpollShim
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// A TCP (or Unix-domain) socket with GCDAsyncSocket's API, pinned to one event loop.
///
/// Reads and writes are queued with tags and timeouts and complete in order through the delegate, as with
/// CocoaAsyncSocket's GCDAsyncSocket. Unlike it, every socket lives on one ``EventLoop`` for life: its I/O,
/// timers and state are handled on that loop's thread, and, when it has no `delegateQueue`, its delegate is
/// called right there, with no thread hop. Methods may be called from any thread.
///
/// ```swift
/// let server = GCDAsyncSocket(delegate: EchoDelegate(), delegateQueue: nil)
/// try server.accept(onInterface: "127.0.0.1", port: 0)
/// print("listening on", server.localPort)
/// ```
open class GCDAsyncSocket: @unchecked Sendable {
    // Thread-safety: `eventLoop`, `group` are immutable; `shared` is a mutex for what any thread may read or
    // set (delegate, configuration, the connection snapshot the getters return); everything else is confined
    // to `eventLoop`'s thread.

    /// The loop this socket belongs to for life.
    public let eventLoop: EventLoop
    /// The group accepted sockets are spread over (the loop's own group, or only this loop).
    let group: EventLoopGroup?
    let shared: Locked<SharedState>

    // MARK: Loop-confined state
    //
    // `@exclusivity(unchecked)`: these are touched only on the loop's thread, one pump at a time, and a
    // runtime exclusivity check costs about 230 instructions (a thread-local lookup), which on the echo path
    // was a third of all the work per round trip (callgrind, see docs/benchmarks.md). The tests run the same
    // code with the checks of everything else still on.

    @exclusivity(unchecked) weak var loopDelegate: (any GCDAsyncSocketDelegate)?
    @exclusivity(unchecked) var loopDelegateQueue: DispatchQueue?
    /// Where callbacks go: the delegate above, or an ``AsyncSocket``'s handler, held strongly (it holds
    /// nothing that leads back to the socket, so no cycle, and a weak reference to it would cost each async
    /// connection a side-table allocation and every callback a weak load).
    @exclusivity(unchecked) var sink = Sink.delegate
    /// Plaintext or TLS (``Transport``).
    @exclusivity(unchecked) var transport = Transport.plain
    // The order packs the 4-byte fields into the tail of the 20-byte op queues and the one-byte state at the
    // end: the instance is 216 bytes, a 224-byte chunk (FootprintTests holds it there).
    @exclusivity(unchecked) var config = Configuration()
    @exclusivity(unchecked) var reads = OpQueue<ReadOp>()
    @exclusivity(unchecked) var nextOpID: UInt32 = 0
    @exclusivity(unchecked) var writes = OpQueue<WriteOp>()
    @exclusivity(unchecked) var readTimerOp: UInt32 = .max
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
    /// Changes at every close: work started for an earlier connection (DNS, connect attempts) checks it.
    @exclusivity(unchecked) var stateIndex: UInt32 = 0
    /// `recv` calls left before this wakeup's turn ends (``SocketOptions/maxReadsPerWakeup``, reset by
    /// `handleIO`): one flooding peer cannot keep the loop from its other descriptors.
    @exclusivity(unchecked) var readBudget = Int16(SocketOptions().maxReadsPerWakeup)
    // The connection's state, one byte each: see Engine/ConnectionState.swift.
    @exclusivity(unchecked) var lifecycle = Lifecycle.idle
    @exclusivity(unchecked) var readSide = ReadSide.open
    @exclusivity(unchecked) var writeSide = WriteSide.open
    @exclusivity(unchecked) var ending = Ending.none
    @exclusivity(unchecked) var writability = Writability.writable
    @exclusivity(unchecked) var continuous = Continuous.off
    @exclusivity(unchecked) var pumpState: PumpState = []
    @exclusivity(unchecked) var readiness: Readiness = []
    @exclusivity(unchecked) var asking: TimeoutQuestions = []
    @exclusivity(unchecked) var traits: Traits = []

    /// A socket on `loop`, or on the next loop of `group`, or of the shared default group.
    ///
    /// - Parameters:
    ///   - delegate: receives the callbacks (held weakly, as GCDAsyncSocket does).
    ///   - delegateQueue: where callbacks run; `nil` runs them on the socket's event loop (fastest).
    ///   - loop: the loop to pin the socket to.
    ///   - group: when `loop` is nil, the socket takes `group.next()`; accepted sockets are spread over it.
    public init(
        delegate: (any GCDAsyncSocketDelegate)? = nil, delegateQueue: DispatchQueue? = nil,
        loop: EventLoop? = nil, group: EventLoopGroup? = nil
    ) {
        let group = group ?? (loop == nil ? Self.defaultGroup : nil)
        self.eventLoop = loop ?? group!.next()
        self.group = group
        self.shared = Locked(storage: SharedStorage.create(minimumCapacity: 1) { _ in
            SharedState(delegate: delegate, delegateQueue: delegateQueue)
        })
        self.loopDelegate = delegate
        self.loopDelegateQueue = delegateQueue
    }

    /// GCDAsyncSocket closes its socket when it is deallocated, and ported code stops a server by releasing
    /// its listening socket. The loop holds a connected socket while its descriptor is open, so only a
    /// listening socket gets here open: its descriptors belong to handlers that do not keep it alive, and
    /// are closed on the loop (a Unix socket's file removed).
    deinit {
        // A socket that never listened (or connected) has no dial state, hence no listeners: no lock to take
        // (every accepted connection ends here). Nothing else references the socket any more, so reading the
        // loop's field here is safe.
        guard dial != nil else { return }
        let open = shared.withLock { $0.openListeners }
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

    /// GCDAsyncSocket's designated initialiser; the socket queue is ignored (the event loop takes its place).
    public convenience init(delegate: (any GCDAsyncSocketDelegate)?, delegateQueue: DispatchQueue?, socketQueue: DispatchQueue?) {
        self.init(delegate: delegate, delegateQueue: delegateQueue)
    }

    /// A socket without a delegate yet.
    public convenience init() {
        self.init(delegate: nil, delegateQueue: nil)
    }

    /// The group sockets use when given neither a loop nor a group: one loop per core, started on first use.
    public static var defaultGroup: EventLoopGroup { DefaultGroup.group }

    private enum DefaultGroup {
        static let group: EventLoopGroup = {
            do {
                return try EventLoopGroup(name: "loopsocket")
            } catch {
                fatalError("LoopSocket: cannot start the default event loop group: \(error)")
            }
        }()
    }

    /// What only a connecting or listening socket holds, out of line. Loop only.
    final class DialState {
        // Unchecked like the socket's own loop-confined fields: touched only on the socket's loop.
        @exclusivity(unchecked) var connectTimer = TimerID.invalid
        @exclusivity(unchecked) var listeners: [ListenHandler] = []
        @exclusivity(unchecked) var connecting: ConnectAttempts?
        @exclusivity(unchecked) var unixListenPath: String?
        /// The listener's delegate type found to take the default `newSocketQueueForConnection` (not asked again).
        @exclusivity(unchecked) var defaultQueueChooser: ObjectIdentifier?
        /// The default `newSocketQueueForConnection` ran since the listener last cleared this.
        @exclusivity(unchecked) var defaultQueueChooserRan = false
    }

    /// The ``DialState``, allocated on first use. Loop only.
    private var dialState: DialState {
        if let dial { return dial }
        let state = DialState()
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
}

// MARK: - State

extension GCDAsyncSocket {
    /// `shared`'s storage: a non-generic class, so creating a socket does not look a generic class's metadata
    /// up at run time (see `Locked.init(storage:)`).
    final class SharedStorage: ManagedBuffer<SharedState, cepoll_lock_t> {}

    /// What any thread may read or set, under `shared`'s mutex.
    ///
    /// Kept small: every connection holds one (in the same allocation as its mutex), so what only listening,
    /// TLS or `userData`-using sockets set lives in `rare`, allocated when first set to something.
    struct SharedState: @unchecked Sendable {
        weak var delegate: (any GCDAsyncSocketDelegate)?
        var delegateQueue: DispatchQueue?
        var configuration = Configuration()
        private var rare: HeapBox<Rare>?
        /// The connected descriptor, for the address getters to ask the kernel (`getpeername`/`getsockname`)
        /// under this lock; -1 when not connected. The loop clears it under the lock before closing the
        /// descriptor, so a getter never asks a closed, or reused, descriptor. Asking on demand instead of
        /// keeping both addresses here (29 bytes each) saves an idle connection 64 bytes and every accept
        /// and connect a `getsockname`.
        var fd: Int32 = -1
        /// Bumped by every connect, accept or adoption: the loop publishes status only for the one it serves,
        /// so closing a connection after `disconnect()` from another thread cannot overwrite the status of a
        /// connect made right after it. (32 bits: it is only compared for equality with the latest.)
        var claim: UInt32 = 0
        /// The status the getters report. Last, with the 4-byte fields before it: the state is 49 bytes, and
        /// its `Locked` object, lock word included, 72 (an 80-byte chunk).
        var status = Status.idle

        /// What few sockets set, out of line.
        struct Rare {
            var userData: Any?
            var listenAddresses: [SocketAddress] = []
            var tls: TLSConnectionInfo?
            var openListeners: (handlers: [ListenHandler], unixPath: String?) = ([], nil)
            var continuousTag = 0
            /// Chunks of continuous reads dispatched to the delegate queue and not yet delivered.
            var continuousInFlight = 0
            /// The loop paused reading at the limit and waits to be told to go on.
            var continuousPaused = false
        }

        init(delegate: (any GCDAsyncSocketDelegate)?, delegateQueue: DispatchQueue?) {
            self.delegate = delegate
            self.delegateQueue = delegateQueue
        }

        /// Sets a field of `rare`, allocating it only for a value other than the default.
        private mutating func setRare(isDefault: Bool, _ body: (inout Rare) -> Void) {
            if rare == nil {
                if isDefault { return }
                rare = HeapBox(Rare())
            }
            body(&rare!.value)
        }

        /// Sets the listen addresses and clears the TLS info, as every change of status does; with no `rare`
        /// box and nothing to listen on, there is nothing to do (once per connection: the setters' closures
        /// cost more than the test).
        mutating func reset(listening: [SocketAddress]) {
            if rare == nil && listening.isEmpty { return }
            listenAddresses = listening
            tls = nil
        }

        var userData: Any? {
            get { rare?.value.userData }
            set { setRare(isDefault: newValue == nil) { $0.userData = newValue } }
        }
        var listenAddresses: [SocketAddress] {
            get { rare?.value.listenAddresses ?? [] }
            set { setRare(isDefault: newValue.isEmpty) { $0.listenAddresses = newValue } }
        }
        /// What the TLS handshake negotiated, once the socket is secure.
        var tls: TLSConnectionInfo? {
            get { rare?.value.tls }
            set { setRare(isDefault: newValue == nil) { $0.tls = newValue } }
        }
        /// The tag of ``GCDAsyncSocket/beginReceiving(tag:)``'s reads.
        var continuousTag: Int {
            get { rare?.value.continuousTag ?? 0 }
            set { setRare(isDefault: newValue == 0) { $0.continuousTag = newValue } }
        }
        /// Counts a continuous-read chunk dispatched to the delegate queue; true when that reaches `limit`
        /// (the loop then pauses reading until ``continuousChunkDelivered(limit:)`` says to go on).
        mutating func continuousChunkDispatched(limit: Int) -> Bool {
            if rare == nil { rare = HeapBox(Rare()) }
            rare!.value.continuousInFlight += 1
            guard rare!.value.continuousInFlight >= limit else { return false }
            rare!.value.continuousPaused = true
            return true
        }

        /// Counts a continuous-read chunk delivered; true when reading was paused and may go on (half the
        /// limit delivered, so that it does not stop and start at every chunk).
        mutating func continuousChunkDelivered(limit: Int) -> Bool {
            guard rare != nil else { return false }
            rare!.value.continuousInFlight -= 1
            guard rare!.value.continuousPaused, rare!.value.continuousInFlight <= limit / 2 else { return false }
            rare!.value.continuousPaused = false
            return true
        }

        /// The listening handlers and Unix socket path, for `deinit` (which may run on any thread).
        var openListeners: (handlers: [ListenHandler], unixPath: String?) {
            get { rare?.value.openListeners ?? ([], nil) }
            set { setRare(isDefault: newValue.handlers.isEmpty && newValue.unixPath == nil) { $0.openListeners = newValue } }
        }
    }

    /// The settings GCDAsyncSocket exposes as properties, plus ``SocketOptions``; copied to the loop when a
    /// connect or accept starts.
    ///
    /// Boxed and copy-on-write (``HeapBox``): every socket holds two (the shared copy and the loop's), and the
    /// connections a listener accepts all share its box, so an idle connection carries two pointers instead
    /// of twice 144 bytes. Sockets start with one default box shared by all.
    struct Configuration: @unchecked Sendable {
        // @unchecked: a value type like `Array`: a shared box is never written, a write first copies it.
        struct Values {
            var ipv4Enabled = true
            var ipv6Enabled = true
            var ipv4PreferredOverIPv6 = true
            var alternateAddressDelay: TimeInterval = 0.3
            var autoDisconnectOnClosedReadStream = true
            var timeoutsFailOnlyTheOperation = false
            var options = SocketOptions()
            var claim: UInt32 = 0
            var connectHost: String?
        }

        // nonisolated(unsafe): never mutated in place; a copy made from it gets its own box on its first change.
        nonisolated(unsafe) private static let defaultBox = HeapBox(Values())

        private var box: HeapBox<Values>

        init() {
            box = Self.defaultBox
        }

        var ipv4Enabled: Bool {
            get { box.value.ipv4Enabled }
            set { box.value.ipv4Enabled = newValue }
        }
        var ipv6Enabled: Bool {
            get { box.value.ipv6Enabled }
            set { box.value.ipv6Enabled = newValue }
        }
        var ipv4PreferredOverIPv6: Bool {
            get { box.value.ipv4PreferredOverIPv6 }
            set { box.value.ipv4PreferredOverIPv6 = newValue }
        }
        var alternateAddressDelay: TimeInterval {
            get { box.value.alternateAddressDelay }
            set { box.value.alternateAddressDelay = newValue }
        }
        var autoDisconnectOnClosedReadStream: Bool {
            get { box.value.autoDisconnectOnClosedReadStream }
            set { box.value.autoDisconnectOnClosedReadStream = newValue }
        }
        var timeoutsFailOnlyTheOperation: Bool {
            get { box.value.timeoutsFailOnlyTheOperation }
            set { box.value.timeoutsFailOnlyTheOperation = newValue }
        }
        var options: SocketOptions {
            get { box.value.options }
            _modify { yield &box.value.options }
        }
        /// The ``SharedState/claim`` of the connect or accept this copy was made for.
        var claim: UInt32 {
            get { box.value.claim }
            set { box.value.claim = newValue }
        }
        /// The host given to `connect(toHost:)`: a TLS client verifies it unless told another name.
        var connectHost: String? {
            get { box.value.connectHost }
            set { box.value.connectHost = newValue }
        }
    }
}

extension GCDAsyncSocket: DelegatingSocket {}
