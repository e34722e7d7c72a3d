import Dispatch
import EpollLoop
import FoundationEssentials

/// A TCP (or Unix-domain) socket with GCDAsyncSocket's API, pinned to one event loop.
///
/// Reads and writes are queued with tags and timeouts and complete in order through the delegate, as with
/// CocoaAsyncSocket's GCDAsyncSocket. Unlike it, every socket lives on one `EventLoop` for life: its I/O,
/// timers and state are handled on that loop's thread, and, when it has no `delegateQueue`, its delegate is
/// called right there, with no thread hop. Methods may be called from any thread.
///
/// ```swift
/// let server = GCDAsyncSocket(delegate: EchoDelegate(), delegateQueue: nil)
/// try server.accept(onInterface: "127.0.0.1", port: 0)
/// print("listening on", server.localPort)
/// ```
open class GCDAsyncSocket: ConnectionEngine, @unchecked Sendable {
    // The face: the API (the other `GCDAsyncSocket+…` files) and the sink that turns the engine's events into
    // delegate callbacks (`GCDAsyncSocket+Sink.swift`). The engine (the superclass) holds the connection.

    // Loop-confined, as the engine's fields are (see there for `@exclusivity(unchecked)`): the copies of the
    // delegate and its queue that callbacks use.
    @exclusivity(unchecked) weak var loopDelegate: (any GCDAsyncSocketDelegate)? {
        didSet { if case .delegateIgnoringWrites = recipient { recipient = .delegate } }
    }
    @exclusivity(unchecked) var loopDelegateQueue: DispatchQueue?
    /// Where callbacks go: the delegate above, or an ``AsyncSocket``'s handler, held strongly (it holds
    /// nothing that leads back to the socket, so no cycle, and a weak reference to it would cost each async
    /// connection a side-table allocation and every callback a weak load).
    @exclusivity(unchecked) var recipient = Recipient.delegate
    /// The delegate and its queue as the getters report them, which any thread may call: read and written
    /// only under the engine's lock (``ConnectionEngine/withLock(_:)``). A setter changes these at once and
    /// the loop's copies above in order with the socket's other work.
    @exclusivity(unchecked) weak var reportedDelegate: AnyObject?
    @exclusivity(unchecked) var reportedDelegateQueue: DispatchQueue?

    /// Where callbacks go: the delegate (inline or on its queue, ``DelegateTarget``), a listener's with its
    /// ``QueueChooserMemo`` once it has accepted; or an ``AsyncSocket``'s handler, held strongly and called
    /// inline. Fixed once the socket is handed out, but for the delegate's note about write completions.
    /// (Cases rather than an optional memo and a flag: two class payloads and two empty cases fit one word,
    /// where a flag of its own took the socket object into malloc's next size.)
    enum Recipient {
        case delegate
        /// The delegate, which takes the default, empty `socket(_:didWriteDataWithTag:)`: a completed write
        /// tells nobody (``GCDAsyncSocket/noteDefaultDidWriteRan(by:)``). Back to ``delegate`` when the
        /// delegate changes.
        case delegateIgnoringWrites
        case listeningDelegate(QueueChooserMemo)
        case async(AsyncSocketHandler)
    }

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
        self.loopDelegate = delegate
        self.loopDelegateQueue = delegateQueue
        self.reportedDelegate = delegate
        self.reportedDelegateQueue = delegateQueue
        self.recipient = Self.recipient(for: delegate)
        super.init(loop: loop, group: group, configuration: Configuration())
    }

    /// A socket for a connection a listener accepted, on `loop`, born with the listener's `configuration`
    /// (``ConnectionEngine/init(loop:group:configuration:)``). `@usableFromInline` for the reason the
    /// engine's initialiser is.
    @usableFromInline
    init(delegate: (any GCDAsyncSocketDelegate)?, delegateQueue: DispatchQueue?, loop: EventLoop, configuration: Configuration) {
        self.loopDelegate = delegate
        self.loopDelegateQueue = delegateQueue
        self.reportedDelegate = delegate
        self.reportedDelegateQueue = delegateQueue
        self.recipient = Self.recipient(for: delegate)
        super.init(loop: loop, group: nil, configuration: configuration)
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
    public static var defaultGroup: EventLoopGroup { fallbackGroup }

    // MARK: The sink (see ConnectionEngine): the engine's events, to the delegate or the async handler, by
    // one route: the hot read and write, and one report for the rest. Overrides live in the class body; the
    // report's delivery is in GCDAsyncSocket+Sink.swift.

    @inline(__always)
    override func sinkDidRead(_ data: Data, tag: Int) {
        switch delegateTarget {
        case .none: return
        case .inline(let delegate): delegate.socket(self, didRead: data, withTag: tag)
        case .queued(let delegate, let queue):
            let box = UncheckedSendable(delegate)
            queue.async { [self] in box.value.socket(self, didRead: data, withTag: tag) }
        }
    }

    @inline(__always)
    override func sinkDidWrite(tag: Int) {
        // A delegate's weak load and its release are about 120 instructions (its side table puts both on the
        // slow path; callgrind, echo-server), and most servers never look at write completions.
        if case .delegateIgnoringWrites = recipient { return }
        switch delegateTarget {
        case .none: return
        case .inline(let delegate): delegate.socket(self, didWriteDataWithTag: tag)
        case .queued(let delegate, let queue):
            let box = UncheckedSendable(delegate)
            queue.async { [self] in box.value.socket(self, didWriteDataWithTag: tag) }
        }
    }

    override func sinkReport(_ event: ConnectionReport) {
        if case .async(let handler) = recipient { return handler.report(event, from: self) }
        deliver(event)
    }

    override func sinkError(_ error: ConnectionError) -> any Error { GCDAsyncSocketError.reporting(error) }
}

extension GCDAsyncSocket: DelegatingSocket {}
