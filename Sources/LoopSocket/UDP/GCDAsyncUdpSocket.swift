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
open class GCDAsyncUdpSocket: DatagramEngine, @unchecked Sendable {
    // The face: the API (the other `GCDAsyncUdpSocket+…` files) and the sink that turns the engine's events
    // into delegate callbacks (`GCDAsyncUdpSocket+Delegate.swift`). The engine (the superclass) holds the
    // descriptors, the queues and the state. `faceShared` is a mutex for the delegate, its queue and the user
    // data, which any thread may read or set; the loop's copies of the delegate and queue are loop-confined.

    let faceShared: Locked<FaceState>
    @exclusivity(unchecked) weak var loopDelegate: (any GCDAsyncUdpSocketDelegate)? {
        didSet { sendCallbackIsDefault = false }
    }
    @exclusivity(unchecked) var loopDelegateQueue: DispatchQueue?
    /// The delegate takes the default, empty `udpSocket(_:didSendDataWithTag:)`, so a sent datagram tells
    /// nobody (``noteDefaultDidSendRan(by:)``). Cleared when the delegate changes. Loop only.
    @exclusivity(unchecked) var sendCallbackIsDefault = false

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
        self.faceShared = Locked(FaceState(delegate: delegate, delegateQueue: delegateQueue))
        self.loopDelegate = delegate
        self.loopDelegateQueue = delegateQueue
        super.init(loop: loop ?? (group ?? GCDAsyncSocket.defaultGroup).next())
    }

    // MARK: The sink (see DatagramEngine): the engine's events, to the delegate.

    @inline(__always)
    override func sinkDidReceive(_ data: Data, from address: Data, context: Any?) {
        notifyDidReceive(data, from: address, context: context)
    }

    @inline(__always)
    override func sinkDidSend(tag: Int) {
        notifyDidSend(tag: tag)
    }

    override func sinkReport(_ event: DatagramEvent) {
        switch event {
        case .didNotSend(let tag, let failure):
            let error = GCDAsyncUdpSocketError(failure)
            notify { $0.udpSocket($1, didNotSendDataWithTag: tag, dueToError: error) }
        case .didNotReceive(let failure):
            let error = GCDAsyncUdpSocketError(failure)
            notify { $0.udpSocket($1, didNotReceiveDataDueToError: error) }
        case .connected(let address): notify { $0.udpSocket($1, didConnectToAddress: address) }
        case .didNotConnect(let failure):
            let error = GCDAsyncUdpSocketError(failure)
            notify { $0.udpSocket($1, didNotConnect: error) }
        case .closed(let failure):
            let error = failure.map(GCDAsyncUdpSocketError.init)
            notify { $0.udpSocketDidClose($1, withError: error) }
        }
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
    func throwingOnLoop(_ call: String, _ body: () throws(DatagramError) -> Void) throws(GCDAsyncUdpSocketError) {
        let outcome = waitForLoop { () -> DatagramError? in
            do throws(DatagramError) { try body() } catch { return error }
            return nil
        }
        switch outcome {
        case .ran(nil): return
        case .ran(let error?): throw GCDAsyncUdpSocketError(error)
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
    /// What any thread may read or set of the face, under `faceShared`'s mutex.
    struct FaceState: @unchecked Sendable {
        weak var delegate: (any GCDAsyncUdpSocketDelegate)?
        var delegateQueue: DispatchQueue?
        var userData: Any?

        init(delegate: (any GCDAsyncUdpSocketDelegate)?, delegateQueue: DispatchQueue?) {
            self.delegate = delegate
            self.delegateQueue = delegateQueue
        }
    }
}

/// GCDAsyncUdpSocket's receive filter: return false to drop the datagram; anything stored in `context` is
/// passed to `udpSocket(_:didReceive:fromAddress:withFilterContext:)`.
public typealias GCDAsyncUdpSocketReceiveFilterBlock = (_ data: Data, _ address: Data, _ context: AutoreleasingUnsafeMutablePointer<AnyObject?>) -> Bool

/// GCDAsyncUdpSocket's send filter: return false to drop the datagram (it is then reported as sent).
public typealias GCDAsyncUdpSocketSendFilterBlock = (_ data: Data, _ address: Data, _ tag: Int) -> Bool


extension GCDAsyncUdpSocket: DelegatingSocket {}
