import CEpollShim
import Dispatch
import FoundationEssentials

// What any thread may read or set (under the engine's lock), and the engine's configuration.

extension ConnectionEngine {
    /// `shared`'s storage: a non-generic class, so creating a socket does not look a generic class's metadata
    /// up at run time (see `Locked.init(storage:)`).
    final class SharedStorage: ManagedBuffer<SharedState, cepoll_lock_t> {}

    /// What any thread may read or set, under `shared`'s mutex.
    ///
    /// Kept small: every connection holds one (in the same allocation as its mutex), so what only listening
    /// or `userData`-using sockets set lives in `rare`, allocated when first set to something, and a TLS
    /// connection's negotiated parameters in a box of their own (`tlsBox`): in `rare`, whose other fields a
    /// TLS connection does not use, they cost each idle TLS connection about 80 bytes more.
    struct SharedState: @unchecked Sendable {
        /// The face's delegate and its queue, for its getters (the loop keeps its own copies). The engine
        /// never reads them.
        weak var delegate: AnyObject?
        var delegateQueue: DispatchQueue?
        var configuration = Configuration()
        private var rare: HeapBox<Rare>?
        private var tlsBox: HeapBox<TLSConnectionInfo>?
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
            var openListeners: (handlers: [ListenHandler], unixPath: String?) = ([], nil)
            var continuousTag = 0
            /// Chunks of continuous reads dispatched to the delegate queue and not yet delivered.
            var continuousInFlight = 0
            /// The loop paused reading at the limit and waits to be told to go on.
            var continuousPaused = false
        }

        init(delegate: AnyObject?, delegateQueue: DispatchQueue?) {
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
        /// box and nothing to listen on, there is nothing more to do (once per connection: the setters'
        /// closures cost more than the test).
        mutating func reset(listening: [SocketAddress]) {
            if tlsBox != nil { tlsBox = nil }
            if rare == nil && listening.isEmpty { return }
            listenAddresses = listening
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
            get { tlsBox?.value }
            set { tlsBox = newValue.map { HeapBox($0) } }
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

extension ConnectionEngine: LoopPinned {
    /// Publishes the status (and the connected descriptor) the getters use; with `claim`, only if no newer
    /// connect or accept has claimed the socket since (the loop passes the claim of the connection it serves).
    func publish(status: Status, fd: Int32 = -1, listening: [SocketAddress] = [], onlyFor claim: UInt32? = nil) {
        shared.withLock {
            if let claim, $0.claim != claim { return }
            $0.status = status
            $0.fd = fd
            $0.reset(listening: listening)
        }
    }

    /// Withdraws `fd` from the getters before the loop closes it (whatever has claimed the socket since).
    func unpublish(_ fd: Int32) {
        shared.withLock { if $0.fd == fd { $0.fd = -1 } }
    }

    /// The connected descriptor's peer or local address, asked of the kernel under the lock; nil unless connected.
    func connected(peer: Bool) -> SocketAddress? {
        shared.withLock { state in
            state.status == .connected && state.fd >= 0 ? SocketAddress.of(fd: state.fd, peer: peer) : nil
        }
    }
}
