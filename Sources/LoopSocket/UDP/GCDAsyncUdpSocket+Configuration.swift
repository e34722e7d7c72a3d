import Dispatch
import EpollLoop

/// Delegate, families and sizes: GCDAsyncUdpSocket's getter and setter methods (its header declares them as
/// methods, not properties, so Swift calls them as methods: `sock.setIPv4Enabled(false)`).
extension GCDAsyncUdpSocket {
    // MARK: Delegate

    /// The delegate (held weakly).
    public func delegate() -> (any GCDAsyncUdpSocketDelegate)? {
        faceShared.withLock { $0.delegate }
    }

    /// Sets the delegate; callbacks already on their way may still reach the previous one.
    public func setDelegate(_ delegate: (any GCDAsyncUdpSocketDelegate)?) {
        changeDelegate(.delegate(delegate), waiting: false)
    }

    /// Sets the delegate, waiting until no callback can reach the previous one from the loop (from any
    /// thread, another event loop's included). Except when that wait could deadlock, on loop A's thread
    /// while the socket's loop waits, itself or through other loops, for A: then the change is queued to the
    /// socket's loop and the call returns at once (the getter shows it at once).
    public func synchronouslySetDelegate(_ delegate: (any GCDAsyncUdpSocketDelegate)?) {
        changeDelegate(.delegate(delegate), waiting: true)
    }

    /// The queue callbacks run on; `nil`: the socket's event loop.
    public func delegateQueue() -> DispatchQueue? {
        faceShared.withLock { $0.delegateQueue }
    }

    /// Sets the queue callbacks run on (`nil`: inline on the event loop).
    public func setDelegateQueue(_ queue: DispatchQueue?) {
        changeDelegate(.queue(queue), waiting: false)
    }

    /// Sets the delegate queue, waiting until the loop uses it (or, where that wait could deadlock, queueing
    /// the change, as ``synchronouslySetDelegate(_:)``).
    public func synchronouslySetDelegateQueue(_ queue: DispatchQueue?) {
        changeDelegate(.queue(queue), waiting: true)
    }

    /// Sets delegate and queue together.
    public func setDelegate(_ delegate: (any GCDAsyncUdpSocketDelegate)?, delegateQueue: DispatchQueue?) {
        changeDelegate(.both(delegate, delegateQueue), waiting: false)
    }

    /// Sets delegate and queue together, waiting until the loop uses them (or, where that wait could
    /// deadlock, queueing the change, as ``synchronouslySetDelegate(_:)``).
    public func synchronouslySetDelegate(_ delegate: (any GCDAsyncUdpSocketDelegate)?, delegateQueue: DispatchQueue?) {
        changeDelegate(.both(delegate, delegateQueue), waiting: true)
    }

    func storeDelegate(_ change: DelegateChange<any GCDAsyncUdpSocketDelegate>) {
        faceShared.withLock { change.apply(delegate: &$0.delegate, queue: &$0.delegateQueue) }
    }

    /// Anything the user wants to keep with the socket.
    public func userData() -> Any? {
        faceShared.withLock { $0.userData }
    }

    /// Sets ``userData()``.
    public func setUserData(_ userData: Any?) {
        let box = UncheckedSendable(userData)
        faceShared.withLock { $0.userData = box.value }
    }

    // MARK: Families

    var configuration: Configuration { shared.withLock { $0.configuration } }

    private func configure(_ change: (inout Configuration) -> Void) {
        let updated = shared.withLock { change(&$0.configuration); return $0.configuration }
        if eventLoop.inEventLoop {
            adoptConfiguration(updated)
        } else {
            // Queued like a send from this thread, so a send this thread makes after the change sees it. It
            // copies the configuration as it is when it runs, so changes from several threads converge.
            _ = onLoop { [self] in adoptConfiguration(configuration) }
        }
    }

    /// Whether IPv4 may be used (default true). Takes effect at the next bind, connect or first send.
    public func isIPv4Enabled() -> Bool { configuration.ipv4Enabled }
    /// Enables or disables IPv4.
    public func setIPv4Enabled(_ flag: Bool) { configure { $0.ipv4Enabled = flag } }
    /// Whether IPv6 may be used (default true).
    public func isIPv6Enabled() -> Bool { configuration.ipv6Enabled }
    /// Enables or disables IPv6.
    public func setIPv6Enabled(_ flag: Bool) { configure { $0.ipv6Enabled = flag } }
    /// Whether a host with both kinds of address is reached over IPv4 (the default).
    public func isIPv4Preferred() -> Bool { configuration.preference == .ipv4 }
    /// Whether a host with both kinds of address is reached over IPv6.
    public func isIPv6Preferred() -> Bool { configuration.preference == .ipv6 }
    /// Whether the resolver's first address is used, whatever its family.
    public func isIPVersionNeutral() -> Bool { configuration.preference == .neutral }
    /// Prefers IPv4.
    public func setPreferIPv4() { configure { $0.preference = .ipv4 } }
    /// Prefers IPv6.
    public func setPreferIPv6() { configure { $0.preference = .ipv6 } }
    /// Uses the resolver's first address.
    public func setIPVersionNeutral() { configure { $0.preference = .neutral } }

    // MARK: Sizes

    /// The largest IPv4 datagram received whole (default 65,535); a longer one is dropped and reported
    /// through ``GCDAsyncUdpSocketDelegate/udpSocket(_:didNotReceiveDataDueToError:)``.
    public func maxReceiveIPv4BufferSize() -> UInt16 { configuration.maxReceive4 }
    /// Sets ``maxReceiveIPv4BufferSize()``.
    public func setMaxReceiveIPv4BufferSize(_ max: UInt16) { configure { $0.maxReceive4 = max } }
    /// The largest IPv6 datagram received whole (default 65,535; at most 65,536 are kept).
    public func maxReceiveIPv6BufferSize() -> UInt32 { configuration.maxReceive6 }
    /// Sets ``maxReceiveIPv6BufferSize()``.
    public func setMaxReceiveIPv6BufferSize(_ max: UInt32) { configure { $0.maxReceive6 = max } }
    /// The largest datagram ``send(_:withTimeout:tag:)`` accepts (default 65,535); a longer one fails with
    /// `badParamError`.
    public func maxSendBufferSize() -> UInt16 { configuration.maxSend }
    /// Sets ``maxSendBufferSize()``.
    public func setMaxSendBufferSize(_ max: UInt16) { configure { $0.maxSend = max } }

    // MARK: Batching and backpressure (not in GCDAsyncUdpSocket)

    /// Datagrams taken per readiness event with one `recvmmsg` (default 32, 1 to 64).
    public func receiveBatchSize() -> Int { configuration.receiveBatch }
    /// Sets ``receiveBatchSize()``, clamped to 1...64.
    public func setReceiveBatchSize(_ count: Int) {
        configure { $0.receiveBatch = Swift.min(Swift.max(count, 1), DatagramScratch.maxBatch) }
    }
    /// The bound on bytes queued for sending (default 1 MiB): a send that would pass it fails at once with
    /// `otherError` (`ENOBUFS`) instead of growing memory without limit.
    public func maxQueuedSendBytes() -> Int { configuration.maxQueuedSendBytes }
    /// Sets ``maxQueuedSendBytes()``.
    public func setMaxQueuedSendBytes(_ bytes: Int) { configure { $0.maxQueuedSendBytes = Swift.max(bytes, 0) } }

    /// Whether UDP segmentation offload is used where the kernel has it (default true): a run of queued
    /// datagrams of one size to one destination leaves as one `UDP_SEGMENT` message (GSO), and runs the
    /// kernel coalesced on receive (`UDP_GRO`) are split back into datagrams. Delivery is the same either way:
    /// one callback per datagram, in order.
    public func isSegmentationOffloadEnabled() -> Bool { configuration.segmentationOffload }
    /// Sets ``isSegmentationOffloadEnabled()``; takes effect for sockets already created too.
    public func setSegmentationOffloadEnabled(_ flag: Bool) {
        configure { $0.segmentationOffload = flag }
        _ = onLoop { [self] in applySegmentationOffload() }
    }
}
