import Dispatch
import EpollLoop
import FoundationEssentials

/// The delegate and the settings, readable and writable from any thread.
extension GCDAsyncSocket {
    /// The delegate (held weakly). Setting it from another thread takes effect on the loop in order with the
    /// socket's other work.
    public var delegate: (any GCDAsyncSocketDelegate)? {
        get { storedDelegate().delegate }
        set { changeDelegate(.delegate(newValue), waiting: false) }
    }

    /// The queue delegate callbacks run on; `nil` runs them inline on the socket's event loop.
    public var delegateQueue: DispatchQueue? {
        get { storedDelegate().queue }
        set { changeDelegate(.queue(newValue), waiting: false) }
    }

    /// Sets the delegate and its queue together.
    public func setDelegate(_ delegate: (any GCDAsyncSocketDelegate)?, delegateQueue: DispatchQueue?) {
        changeDelegate(.both(delegate, delegateQueue), waiting: false)
    }

    /// Sets the delegate, returning once the loop uses it: from then on no callback from the loop reaches the
    /// previous delegate (one already queued on the delegate queue may still run). Called on another event
    /// loop's thread it waits too, unless the socket's loop is itself waiting (directly or through other
    /// loops) for the caller's: then the change is queued and the call returns at once (the getter shows it
    /// at once), because loops waiting for each other would wait forever.
    public func synchronouslySetDelegate(_ delegate: (any GCDAsyncSocketDelegate)?) {
        changeDelegate(.delegate(delegate), waiting: true)
    }

    /// Sets the delegate queue, returning once the loop uses it (queued without waiting only where waiting
    /// would deadlock, as ``synchronouslySetDelegate(_:)``).
    public func synchronouslySetDelegateQueue(_ delegateQueue: DispatchQueue?) {
        changeDelegate(.queue(delegateQueue), waiting: true)
    }

    /// Sets the delegate and its queue together, returning once the loop uses them (queued without waiting
    /// only where waiting would deadlock, as ``synchronouslySetDelegate(_:)``).
    public func synchronouslySetDelegate(_ delegate: (any GCDAsyncSocketDelegate)?, delegateQueue: DispatchQueue?) {
        changeDelegate(.both(delegate, delegateQueue), waiting: true)
    }

    func storeDelegate(_ change: DelegateChange<any GCDAsyncSocketDelegate>) {
        withLock {
            switch change {
            case .delegate(let delegate): reportedDelegate = delegate
            case .queue(let queue): reportedDelegateQueue = queue
            case .both(let delegate, let queue):
                reportedDelegate = delegate
                reportedDelegateQueue = queue
            }
        }
    }

    /// The delegate and its queue as the getters report them. Kept as a plain object (a weak reference to
    /// an existential would take two words); it was stored as a `GCDAsyncSocketDelegate`.
    func storedDelegate() -> (delegate: (any GCDAsyncSocketDelegate)?, queue: DispatchQueue?) {
        let (object, queue) = withLock { (reportedDelegate, reportedDelegateQueue) }
        return (object as? any GCDAsyncSocketDelegate, queue)
    }

    /// Anything you want to keep with the socket; the socket never looks at it.
    public var userData: Any? {
        get { ownerValue }
        set { ownerValue = newValue }
    }

    /// Whether IPv4 may be used (default true).
    public var isIPv4Enabled: Bool {
        get { settings.ipv4Enabled }
        set { changeSetting(\.ipv4Enabled, to: newValue) }
    }

    /// Whether IPv6 may be used (default true).
    public var isIPv6Enabled: Bool {
        get { settings.ipv6Enabled }
        set { changeSetting(\.ipv6Enabled, to: newValue) }
    }

    /// Whether IPv4 addresses are tried first when a host has both (default true, as GCDAsyncSocket).
    public var isIPv4PreferredOverIPv6: Bool {
        get { settings.ipv4PreferredOverIPv6 }
        set { changeSetting(\.ipv4PreferredOverIPv6, to: newValue) }
    }

    /// Happy Eyeballs: how long a connection attempt runs before the next address is tried in parallel
    /// (default 0.3 s, as GCDAsyncSocket).
    public var alternateAddressDelay: TimeInterval {
        get { settings.alternateAddressDelay }
        set { changeSetting(\.alternateAddressDelay, to: max(0, newValue)) }
    }

    /// Whether the socket disconnects when the peer closes its write side (default true). When false,
    /// `socketDidCloseReadStream` is called and the socket stays open for writing. Applies to a connected
    /// socket too, on its loop in order with other calls: set in `didAcceptNewSocket` (or any callback
    /// without a delegate queue) it is in force before the connection's first byte is read; set from another
    /// thread, an end of stream the loop handled before the setting arrived keeps the old behaviour.
    public var autoDisconnectOnClosedReadStream: Bool {
        get { settings.autoDisconnectOnClosedReadStream }
        set {
            changeSetting(\.autoDisconnectOnClosedReadStream, to: newValue, nowToo: true)
        }
    }

    /// When true, a read timeout, or the timeout of a write not one byte of which has been sent, fails only
    /// that operation (`didFailToReadDataWithTag` / `didFailToWriteDataWithTag`) and the socket stays
    /// connected; a read's bytes go back to the buffer for the next read. A write that times out after part
    /// of it was sent (over TLS: encrypted) still closes the connection with the timeout error, as without
    /// the option: its first bytes are on the wire, and the stream would go on with the next write's.
    /// GCDAsyncSocket always disconnects.
    public var timeoutsFailOnlyTheOperation: Bool {
        get { settings.timeoutsFailOnlyTheOperation }
        set {
            changeSetting(\.timeoutsFailOnlyTheOperation, to: newValue, nowToo: true)
        }
    }

    /// Options applied before the next `connect` or `accept` (see ``SocketOptions``). On a connected
    /// socket, changes to the write water marks and cap take effect at once; the others at the next connect.
    public var options: SocketOptions {
        get { settings.options }
        set {
            changeSetting(\.options, to: newValue, nowToo: true)
        }
    }
}
