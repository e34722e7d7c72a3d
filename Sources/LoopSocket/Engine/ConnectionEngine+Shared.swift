import CEpollShim
import Dispatch
import FoundationEssentials

// What any thread may read or set (under the engine's lock), and the engine's configuration.

extension ConnectionEngine {
    /// What any thread may read or set, under the socket's lock (``ConnectionEngine/withSharedState(_:)``).
    ///
    /// Kept small: every connection holds one (in its socket object, beside the lock), so what only listening
    /// or `userData`-using sockets set lives in `rare`, allocated when first set to something, and a TLS
    /// connection's negotiated parameters in a box of their own (`tlsBox`): in `rare`, whose other fields a
    /// TLS connection does not use, they cost each idle TLS connection about 80 bytes more.
    struct SharedState: @unchecked Sendable {
        var configuration: Configuration
        private var rare: HeapBox<Rare>?
        private var tlsBox: HeapBox<TLSConnectionInfo>?
        /// The connected descriptor, for the address getters to ask the kernel (`getpeername`/`getsockname`)
        /// under this lock; -1 when not connected. The loop clears it under the lock before closing the
        /// descriptor, so a getter never asks a closed, or reused, descriptor. Asking on demand instead of
        /// keeping both addresses here (29 bytes each) saves an idle connection 64 bytes and every accept
        /// and connect a `getsockname`.
        var fd: Int32 = -1
        /// Which connection the socket serves: bumped by every claim (``ConnectionEngine/claim(for:)``: a
        /// connect, a listen, an adoption; an accepted connection starts from its listener's). The loop
        /// publishes status only for the generation it serves, so closing a connection after `disconnect()`
        /// from another thread cannot overwrite the status of a connect made right after it; and work started
        /// for one connection (DNS, timers, answers from the delegate queue) finds itself stale once the
        /// loop's ``Configuration/generation`` has moved on. (32 bits: only compared for equality.)
        var generation: UInt32 = 0
        /// The status the getters report. Last, with the 4-byte fields before it: the state is 33 bytes.
        var status = Status.idle

        /// A socket's shared state, with the configuration it starts with (the default, or an accepted
        /// connection's listener's) and that configuration's generation.
        init(configuration: Configuration) {
            self.configuration = configuration
            generation = configuration.generation
        }

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
        /// Counts a continuous-read chunk dispatched to the delegate queue, and pauses continuous reading
        /// when that reaches `limit` (until ``continuousChunkDelivered(limit:)`` says to go on); returns the
        /// chunk's tag.
        mutating func continuousChunkDispatched(limit: Int) -> Int {
            if rare == nil { rare = HeapBox(Rare()) }
            rare!.value.continuousInFlight += 1
            if rare!.value.continuousInFlight >= limit { rare!.value.continuousPaused = true }
            return rare!.value.continuousTag
        }

        /// Whether continuous reading waits for the delegate queue (the one place this is kept).
        var continuousPaused: Bool { rare?.value.continuousPaused ?? false }

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
    /// of twice 144 bytes. Sockets start with one default box shared by all. (`@usableFromInline`: the
    /// initialiser that makes an accepted connection's socket takes one.)
    @usableFromInline
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
            var generation: UInt32 = 0
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
        /// The ``SharedState/generation`` of the connect, listen or accept this copy was made for.
        var generation: UInt32 {
            get { box.value.generation }
            set { box.value.generation = newValue }
        }
        /// The host given to `connect(toHost:)`: a TLS client verifies it unless told another name.
        var connectHost: String? {
            get { box.value.connectHost }
            set { box.value.connectHost = newValue }
        }
    }
}

extension ConnectionEngine: GenerationChecked {
    /// Publishes the status of `state` (and the connected descriptor) the getters use: the loop's own
    /// state, or off the loop the state a claim is about to make (``ConnectionState/claimed(by:)``) or
    /// `idle`. With `generation`, only if no newer connect or accept has claimed the socket since (the loop
    /// passes the generation it serves).
    func publish(
        _ state: ConnectionState, fd: Int32 = -1, listening: [SocketAddress] = [], onlyFor generation: UInt32? = nil
    ) {
        let status = state.status
        withSharedState {
            if let generation, $0.generation != generation { return }
            $0.status = status
            $0.fd = fd
            $0.reset(listening: listening)
        }
    }

    /// Withdraws `fd` from the getters before the loop closes it (whatever has claimed the socket since).
    func unpublish(_ fd: Int32) {
        withSharedState { if $0.fd == fd { $0.fd = -1 } }
    }

    /// The connected descriptor's peer or local address, asked of the kernel under the lock; nil unless connected.
    func connected(peer: Bool) -> SocketAddress? {
        withSharedState { state in
            state.status == .connected && state.fd >= 0 ? SocketAddress.of(fd: state.fd, peer: peer) : nil
        }
    }
}

// MARK: Claiming and settings: what the face asks of the shared state, from any thread.

extension ConnectionEngine {
    /// Checks that the socket is idle and claims it for `start` (a connect, a listen or an adopted
    /// descriptor: the status of the state it makes), so that a second call fails fast; returns the settings
    /// to start with, stamped with the new generation. Any thread.
    func claim(for start: ConnectionState.Event) throws(ConnectionError) -> Configuration {
        let status = ConnectionState.claimed(by: start).status
        return try withSharedState { state throws(ConnectionError) -> Configuration in
            guard state.status == .idle else { throw ConnectionError(.alreadyStarted) }
            guard state.configuration.ipv4Enabled || state.configuration.ipv6Enabled else {
                throw ConnectionError(.noFamilyEnabled)
            }
            state.status = status
            state.generation &+= 1
            var configuration = state.configuration
            configuration.generation = state.generation
            return configuration
        }
    }

    /// Gives back a claim whose start failed before it reached the loop. Any thread.
    func releaseClaim() {
        publish(.idle)
    }

    /// Runs `start` on the loop, or gives back the claim and throws if the loop is shut down. Any thread.
    func startOnLoop(_ start: @escaping @Sendable () -> Void) throws(ConnectionError) {
        guard onLoop(start) else {
            releaseClaim()
            throw ConnectionError(.loopShutDown)
        }
    }

    /// A value the socket's owner keeps with it, which the engine never looks at. Any thread.
    var ownerValue: Any? {
        get { withSharedState { $0.userData } }
        set {
            let box = UncheckedSendable(newValue)
            withSharedState { $0.userData = box.value }
        }
    }

    /// The settings as the getters report them. Any thread.
    var settings: Configuration {
        withSharedState { $0.configuration }
    }

    /// Sets the setting at `field` for the next connect or listen; `nowToo`: for the running connection as
    /// well, on the loop in order with the socket's other work. Any thread.
    func changeSetting<Value: Sendable>(
        _ field: WritableKeyPath<Configuration, Value> & Sendable, to value: Value, nowToo: Bool = false
    ) {
        withSharedState { $0.configuration[keyPath: field] = value }
        if nowToo { onLoop { [self] in config[keyPath: field] = value } }
    }

    /// Runs `body` under the socket's lock, for a face's own fields that any thread may read (the
    /// delegate its getters report). Any thread.
    func withLock<T>(_ body: () -> T) -> T {
        withSharedState { _ in body() }
    }

    /// The connection the loop serves: work started for an earlier one (DNS, timers, answers from another
    /// queue) finds itself stale once a newer one has claimed the socket (``GenerationChecked``), and checks
    /// the lifecycle it expects for a close without a new claim. Loop only.
    var generation: UInt32 { config.generation }
}
