import CEpollShim
import EpollLoop
import Glibc

/// The `ws://` transport: a nonblocking socket registered with the worker's loop, read with one `recv` into
/// the loop's scratch buffer (the frames are parsed there, in place) and written with one `send` of the frames
/// one read called for. Nothing is allocated per message, and no timer is armed per read.
///
/// EPOLLOUT is armed only while bytes wait for the kernel. Reads go on meanwhile (an echo server that stops
/// reading while its own replies wait would otherwise deadlock with this side), since what the workload
/// queues is bounded already: `--pipeline` echo messages in flight, no open-loop message or ping while bytes
/// wait. Only the answers the server's frames call for (pongs) are not: past `outputLimit` unsent bytes,
/// EPOLLIN is taken out of the interest set until they drain, so a connection that cannot send is given
/// nothing more to send. Unsent bytes stay bounded whatever the server does, and the parser bounds input.
///
/// The connect has `--timeout` (at most 30 s) to finish; a close that waits for its bytes to go waits as long
/// at most. Every descriptor is closed through the loop, exactly once.
final class WebSocketLoopTransport: WebSocketTransport, LoopIOHandler {
    private enum State {
        case idle
        /// The nonblocking connect is under way (interest: writable).
        case connecting
        /// Connected (interest: readable; writable too while bytes wait; writable only while reads pause).
        case open
        /// Asked to close after writing: the last bytes wait for the kernel (interest: writable).
        case draining
        case closed
    }

    // The connection owns its transport, and the worker outlives both: no reference counting on the hot path.
    @exclusivity(unchecked) private var ownerRef: Unmanaged<WebSocketConnection>?
    unowned(unsafe) let worker: LoopWorker
    private let workerRef: Unmanaged<LoopWorker>
    // Loop-confined and never accessed across a call that could re-enter it (as EchoConnection's state).
    @exclusivity(unchecked) private var state = State.idle
    @exclusivity(unchecked) private var fd: Int32 = -1
    /// The connect's, or the closing drain's, deadline.
    @exclusivity(unchecked) private var timer = TimerID.invalid
    /// Bytes written that the kernel has not taken yet; EPOLLOUT is armed exactly while there are some.
    @exclusivity(unchecked) private var unsent = WebSocketOutputBuffer(capacity: 4096)
    @exclusivity(unchecked) private var backedUp = false
    /// Unsent bytes past ``outputLimit``: reads wait until they drain.
    @exclusivity(unchecked) private var readsPaused = false
    /// The unsent bytes past which reads pause: what the workload may queue, and room for the answers one
    /// read of the server's frames can call for.
    private let outputLimit: Int

    /// A transport for `worker`'s loop whose connection queues at most `workloadBytes` unsent bytes itself.
    init(worker: LoopWorker, workloadBytes: Int) {
        self.worker = worker
        workerRef = Unmanaged.passUnretained(worker)
        outputLimit = workloadBytes + LoopWorker.receiveBufferSize
    }

    deinit {
        unsent.deallocate()
    }

    private var loop: EventLoop { worker.loop }

    var isBackedUp: Bool { backedUp }

    // MARK: Connecting

    func attach(_ owner: Unmanaged<WebSocketConnection>) {
        ownerRef = owner
    }

    /// The connection, without a retain (``attach(_:)`` has run before anything reports).
    @inline(__always)
    private var owner: WebSocketConnection { ownerRef.unsafelyUnwrapped.takeUnretainedValue() }

    func connect() {
        state = .connecting
        guard let address = worker.address else {
            return close(failing: ConnectionFailure(.other, "connect: no resolved address for \(worker.config.host)"))
        }
        do {
            fd = try LoopConnect.start(address, loop: loop, handler: self)
        } catch {
            return close(failing: error)
        }
        let seconds = worker.connectTimeout
        arm(seconds) { [unowned self] in
            guard state == .connecting else { return }
            close(failing: ConnectionFailure(.connectTimeout, "connect: no answer within \(seconds) s"))
        }
    }

    private func connectFinished() {
        if let failure = LoopConnect.failure(of: fd) { return close(failing: failure) }
        disarm()
        do {
            try loop.setInterest(.readable, fd: fd)
        } catch {
            return close(failing: ConnectionFailure(ErrorKind.classify(error), "epoll: \(error)"))
        }
        state = .open
        owner.transportConnected()
    }

    // MARK: LoopIOHandler

    func handleIO(_ events: IOEvents) {
        switch state {
        case .open:
            // Hang-ups and errors are read too: recv reports them (0 or the error) in order after the data.
            // (The epoll bits themselves: IOEvents' static members are globals of another module, each read a call.)
            if events.rawValue & (CEPOLL_IN | CEPOLL_HUP | CEPOLL_ERR) != 0 && !readsPaused {
                receive()
            }
            if backedUp && state == .open && events.rawValue & (CEPOLL_OUT | CEPOLL_HUP | CEPOLL_ERR) != 0 {
                // Writable (or an error or hang-up, which the send reports).
                sendUnsent()
                if !backedUp && state == .open { owner.transportDrained() }
            }
        case .draining:
            sendUnsent()
            if state == .draining && !backedUp { close(failing: nil) }
        case .connecting:
            connectFinished()
        case .idle, .closed:
            break
        }
    }

    func loopWillShutDown() {
        // The run is over: closed without a word to the connection (the loop is going away).
        guard state != .idle && state != .closed else { return }
        state = .closed
        disarm()
        closeDescriptor()
    }

    // MARK: Traffic

    /// One `recv` (the loop is level-triggered and reports the rest), handed to the connection in place.
    @inline(__always)
    private func receive() {
        let received: UnsafeRawBufferPointer
        do {
            guard let bytes = try workerRef._withUnsafeGuaranteedRef({ try $0.receive(on: fd) }) else { return }
            received = bytes
        } catch {
            return close(failing: ConnectionFailure(error))
        }
        guard received.count > 0 else {
            return close(failing: ConnectionFailure(.closed, "the server closed the connection"))
        }
        ownerRef.unsafelyUnwrapped._withUnsafeGuaranteedRef { $0.transportReceived(received) }
    }

    @inline(__always)
    func write(_ bytes: UnsafeRawBufferPointer) {
        guard state == .open else { return }
        if backedUp {
            unsent.append(bytes)
            if !readsPaused && unsent.count > outputLimit { watch(backedUp: true, readsPaused: true) }
            return
        }
        var offset = 0
        while offset < bytes.count {
            let result: IOResult<Int>
            do {
                result = try Syscall.send(fd, UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            } catch {
                return close(failing: ConnectionFailure(error))
            }
            guard case .processed(let n) = result, n > 0 else { break }
            offset += n
        }
        guard offset < bytes.count else { return }
        unsent.append(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
        watch(backedUp: true, readsPaused: unsent.count > outputLimit)
    }

    /// Sends what waits until it is all sent (EPOLLOUT then disarmed, EPOLLIN back) or the kernel is full.
    private func sendUnsent() {
        while !unsent.isEmpty {
            let result: IOResult<Int>
            do {
                result = try Syscall.send(fd, unsent.bytes)
            } catch {
                return close(failing: ConnectionFailure(error))
            }
            guard case .processed(let n) = result, n > 0 else {
                if readsPaused && state == .open && unsent.count <= outputLimit {
                    watch(backedUp: true, readsPaused: false)
                }
                return
            }
            unsent.consume(n)
        }
        if state == .open {
            watch(backedUp: false, readsPaused: false)
        } else {
            backedUp = false
        }
    }

    /// Readable while reads are not paused, writable while bytes wait (a draining close has writable only).
    private func watch(backedUp: Bool, readsPaused: Bool) {
        let interest: IOEvents =
            readsPaused ? .writable : backedUp ? [.readable, .writable] : .readable
        do {
            try loop.setInterest(interest, fd: fd)
            self.backedUp = backedUp
            self.readsPaused = readsPaused
        } catch {
            close(failing: ConnectionFailure(ErrorKind.classify(error), "epoll: \(error)"))
        }
    }

    // MARK: Closing

    func close(afterWriting: Bool) {
        switch state {
        case .connecting:
            close(failing: nil)
        case .open where afterWriting && backedUp:
            // Nothing more is read; the drain is bounded like a connect.
            state = .draining
            watch(backedUp: true, readsPaused: true)
            guard state == .draining else { return }
            let seconds = worker.connectTimeout
            arm(seconds) { [unowned self] in
                guard state == .draining else { return }
                close(failing: nil)
            }
        case .open, .draining:
            close(failing: nil)
        case .idle, .closed:
            break
        }
    }

    /// Closes the descriptor (once) and tells the connection, from the loop's queue (never from inside a call
    /// into the transport), with `failure`: what ended the connection, nil when this side closed it.
    private func close(failing failure: ConnectionFailure?) {
        guard state != .idle && state != .closed else { return }
        let wasConnected = state == .open || state == .draining
        state = .closed
        disarm()
        if failure == nil && wasConnected { discardUnreadInput() }
        closeDescriptor()
        unsent.removeAll()
        backedUp = false
        readsPaused = false
        loop.executeOnLoop { [self] in owner.transportClosed(failure) }
    }

    /// Reads and drops what the server sent that nobody read (up to 256 KiB), before a close this side chose:
    /// Linux answers the close of a socket with unread input with a reset, and a reset makes the server's
    /// kernel discard what it has not yet read, such as this side's close frame (GCDAsyncSocket does the same).
    private func discardUnreadInput() {
        let scratch = worker.receiveBuffer
        for _ in 0..<4 {
            guard case .processed(let n)? = try? Syscall.recv(fd, scratch), n == scratch.count else { return }
        }
    }

    private func closeDescriptor() {
        guard fd >= 0 else { return }
        try? loop.close(fd: fd)
        fd = -1
    }

    // MARK: Timer

    private func arm(_ seconds: Double, _ expired: @escaping () -> Void) {
        disarm()
        timer = loop.scheduleOnLoop(at: Deadline.now().uptimeNanoseconds &+ LoadRunner.nanos(seconds)) {
            [unowned self] in
            timer = .invalid
            expired()
        }
    }

    private func disarm() {
        guard timer != .invalid else { return }
        loop.cancelOnLoop(timer)
        timer = .invalid
    }
}
