import EpollLoop

/// The `ws://` transport: a ``LoopTCPSocket`` on the worker's loop, read with one `recv` into the loop's
/// scratch buffer (the frames are parsed there, in place) and written with one `send` of the frames one read
/// called for. Nothing is allocated per message, and no timer is armed per read.
///
/// What the workload queues is bounded already: `--pipeline` echo messages in flight, no open-loop message or
/// ping while bytes wait. Only the answers the server's frames call for (pongs) are not: past `outputLimit`
/// unsent bytes the socket stops reading until they drain, so a connection that cannot send is given nothing
/// more to send. Unsent bytes stay bounded whatever the server does, and the parser bounds input.
///
/// A close this side chooses first reads what the server sent and nobody read, so that its close frame is not
/// lost to a reset. The connection hears of a close from the loop's queue, never from inside a call into the
/// transport.
final class WebSocketLoopTransport: WebSocketTransport, LoopTCPSocketOwner {
    typealias Output = ByteOutputBuffer

    // The connection owns its transport, and the worker outlives both: no reference counting on the hot path.
    @exclusivity(unchecked) private var ownerRef: Unmanaged<WebSocketConnection>?
    private let socket: LoopTCPSocket<WebSocketLoopTransport>

    /// A transport for `worker`'s loop whose connection queues at most `workloadBytes` unsent bytes itself.
    init(worker: LoopWorker, workloadBytes: Int) {
        // The unsent bytes past which reads pause: what the workload may queue, and room for the answers one
        // read of the server's frames can call for.
        socket = LoopTCPSocket(
            worker: worker, output: ByteOutputBuffer(capacity: 4096),
            outputLimit: workloadBytes + LoopWorker.receiveBufferSize, discardsUnreadInput: true)
    }

    var isBackedUp: Bool { socket.isBackedUp }

    func attach(_ owner: Unmanaged<WebSocketConnection>) {
        ownerRef = owner
    }

    /// The connection, without a retain (``attach(_:)`` has run before anything reports).
    @inline(__always)
    private var owner: Unmanaged<WebSocketConnection> { ownerRef.unsafelyUnwrapped }

    func connect() {
        socket.connect(for: self)
    }

    @inline(__always)
    func write(_ bytes: UnsafeRawBufferPointer) {
        socket.send(bytes)
    }

    func close(afterWriting: Bool) {
        socket.close(afterWriting: afterWriting)
    }

    // MARK: LoopTCPSocketOwner

    func handleIO(_ events: IOEvents) {
        socket.handle(events)
    }

    func loopWillShutDown() {
        socket.loopWillShutDown()
    }

    func socketConnected() {
        owner._withUnsafeGuaranteedRef { $0.transportConnected() }
    }

    @inline(__always)
    func socketReceived(_ bytes: UnsafeRawBufferPointer) {
        owner._withUnsafeGuaranteedRef { $0.transportReceived(bytes) }
    }

    func socketDrained() {
        owner._withUnsafeGuaranteedRef { $0.transportDrained() }
    }

    func socketClosed(_ end: LoopTCPSocketEnd, wasOpen: Bool) {
        // The run is over when the loop shuts down: nothing is told (the loop is going away).
        if case .loopShutDown = end { return }
        let owner = owner.takeUnretainedValue()
        socket.worker.loop.executeOnLoop { owner.transportClosed(end.failure) }
    }
}
