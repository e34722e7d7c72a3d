import CEpollShim
import EpollLoop
import Glibc

/// What a ``LoopTCPSocket`` holds its unsent bytes in: one allocation rewritten in place, appended at the end
/// and sent from the start (``EchoSendBuffer``, ``ByteOutputBuffer``).
protocol LoopSocketOutput {
    /// Whether every byte appended has been sent.
    var isEmpty: Bool { get }
    /// How many bytes wait.
    var count: Int { get }
    /// The bytes that wait, first to send first.
    var bytes: UnsafeRawBufferPointer { get }
    /// Appends a copy of `bytes`.
    mutating func append(_ bytes: UnsafeRawBufferPointer)
    /// Marks the first `count` bytes as sent.
    mutating func consume(_ count: Int)
    /// Drops every byte that waits.
    mutating func removeAll()
    /// Frees the memory; the buffer must not be used afterwards.
    func deallocate()
}

/// What a ``LoopTCPSocket`` reports to, on the loop. The socket does not retain it: the owner holds the socket.
///
/// The owner is what the loop calls: its `handleIO(_:)` and `loopWillShutDown()` hand over to the socket's
/// ``LoopTCPSocket/handle(_:)`` and ``LoopTCPSocket/loopWillShutDown()``. The loop sees only the existential,
/// so a generic socket registered itself would run unspecialized (looking up its owner's types at every
/// event); called from its concrete owner it is specialized and inlined.
protocol LoopTCPSocketOwner: LoopIOHandler {
    /// Where the owner's unsent bytes wait.
    associatedtype Output: LoopSocketOutput
    /// The connect is done: the socket is open.
    func socketConnected()
    /// The server's bytes, in the loop's scratch buffer (valid during the call).
    func socketReceived(_ bytes: UnsafeRawBufferPointer)
    /// The bytes that waited for the kernel are all sent: there is room again.
    func socketDrained()
    /// The socket is closed (once per ``LoopTCPSocket/connect(for:)``); `wasOpen`: its connect had finished.
    func socketClosed(_ end: LoopTCPSocketEnd, wasOpen: Bool)
}

extension LoopTCPSocketOwner {
    /// ``LoopIOHandler/handleIO(_:)`` as the loop calls it, for each owner in this module: the protocol's own
    /// default lives in EpollLoop, and a conformance here reaches it only unspecialized.
    static func handleIO(unretained object: UnsafeMutableRawPointer, _ events: IOEvents) {
        Unmanaged<Self>.fromOpaque(object)._withUnsafeGuaranteedRef { $0.handleIO(events) }
    }
}

/// Why a ``LoopTCPSocket`` closed.
enum LoopTCPSocketEnd {
    /// A failure: the connect, the server closing, a socket error, a timeout, or what the owner found wrong.
    case failed(ConnectionFailure)
    /// This side closed it (the owner asked, or a draining close ended).
    case closed
    /// The loop is going away with the run: nothing more will run on it.
    case loopShutDown

    /// The failure, nil when nothing failed.
    var failure: ConnectionFailure? {
        if case .failed(let failure) = self { return failure }
        return nil
    }
}

/// A TCP connection on a worker's loop that talks to the kernel itself, for the connections whose own cost
/// must stay out of the measurement (``EchoConnection``, ``WebSocketLoopTransport``): a nonblocking socket
/// registered with the loop (through its owner), read with one `recv` into the loop's scratch buffer (handed
/// to the owner in place), written with one `send`. Nothing is allocated per message and no timer is armed
/// per read. The connect, the reads, the back-pressure and the close are written here once.
///
/// Back-pressure: EPOLLOUT is armed only while bytes wait for the kernel. Reads go on meanwhile (an echo server
/// that stops reading while its own replies wait would otherwise deadlock with this side), unless more than
/// `outputLimit` bytes wait: then EPOLLIN leaves the interest set until they drain, so a connection that cannot
/// send is given nothing more to send, and what waits stays bounded whatever the server does.
///
/// The connect has the worker's connect timeout to finish; a close that waits for its bytes to go
/// (``close(afterWriting:)``) waits as long at most. Every descriptor is closed through the loop, exactly once,
/// and the owner told once.
final class LoopTCPSocket<Owner: LoopTCPSocketOwner> {
    /// Where the socket is in its life.
    enum State {
        case idle
        /// The nonblocking connect is under way (interest: writable).
        case connecting
        /// Connected (interest: readable; writable too while bytes wait; writable only while reads pause).
        case open
        /// Asked to close after writing: the last bytes wait for the kernel (interest: writable).
        case draining
        case closed
    }

    // The owner holds the socket, and the worker outlives both: no reference counting on the hot path.
    // The mutable state is loop-confined and never accessed across a call that could re-enter it, so it
    // opts out of dynamic exclusivity checks, each of which costs more than the bookkeeping it guards.
    @exclusivity(unchecked) private var ownerRef: Unmanaged<Owner>?
    unowned(unsafe) let worker: LoopWorker
    private let workerRef: Unmanaged<LoopWorker>
    @exclusivity(unchecked) private(set) var state = State.idle
    @exclusivity(unchecked) private var fd: Int32 = -1
    /// The connect's, or the draining close's, deadline.
    @exclusivity(unchecked) private var timer = TimerID.invalid
    /// The bytes the kernel has not taken yet; the owner may write its next ones in place, then ``flush()``.
    @exclusivity(unchecked) var output: Owner.Output
    /// Whether EPOLLOUT is in the interest set: exactly while bytes wait.
    @exclusivity(unchecked) private(set) var isBackedUp = false
    /// More than ``outputLimit`` bytes wait: reads pause until they drain.
    private var readsPaused: Bool { readEvents == 0 }
    /// The epoll bits that call for a read: readable, hang-up and error (recv reports the last two, in order
    /// after the data); none while reads pause. (One mask rather than a flag beside the bits: the test on every
    /// event is one `and`.)
    @exclusivity(unchecked) private var readEvents = CEPOLL_IN | CEPOLL_HUP | CEPOLL_ERR
    /// Bytes handed to the kernel since the socket was made.
    @exclusivity(unchecked) private(set) var sentBytes: UInt64 = 0
    private let outputLimit: Int
    private let discardsUnreadInput: Bool

    /// A socket for `worker`'s loop keeping its unsent bytes in `output`. Reads pause while more than
    /// `outputLimit` bytes wait. `discardsUnreadInput`: a close this side chooses first reads what the server
    /// sent (up to 256 KiB), so the kernel closes with a FIN rather than a reset that could destroy this side's
    /// last bytes before the server reads them (a close frame).
    init(worker: LoopWorker, output: Owner.Output, outputLimit: Int = .max, discardsUnreadInput: Bool = false) {
        self.worker = worker
        workerRef = Unmanaged.passUnretained(worker)
        self.output = output
        self.outputLimit = outputLimit
        self.discardsUnreadInput = discardsUnreadInput
    }

    deinit {
        output.deallocate()
    }

    private var loop: EventLoop { worker.loop }

    /// Whether the connect has finished and nothing has closed the socket since.
    var isOpen: Bool {
        @inline(__always) get { state == .open }
    }

    /// The owner, without a retain (``connect(for:)`` has run before anything reports).
    @inline(__always)
    private var owner: Unmanaged<Owner> { ownerRef.unsafelyUnwrapped }

    // MARK: Connecting

    /// Starts connecting to the worker's resolved address (again, once closed), reporting to `owner`.
    func connect(for owner: Owner) {
        ownerRef = Unmanaged.passUnretained(owner)
        state = .connecting
        guard let address = worker.address else {
            return close(failing: ConnectionFailure(.other, "connect: no resolved address for \(worker.config.host)"))
        }
        do {
            fd = try LoopConnect.start(address, loop: loop, handler: owner)
        } catch {
            return close(failing: error)
        }
        let seconds = worker.connectTimeout
        arm(seconds) { [unowned self] in
            guard state == .connecting else { return }
            close(failing: ConnectionFailure(.connectTimeout, "connect: no answer within \(seconds) s"))
        }
    }

    /// The socket became writable (or failed) while connecting: `SO_ERROR` says which.
    private func connectFinished() {
        if let failure = LoopConnect.failure(of: fd) { return close(failing: failure) }
        disarm()
        do {
            try loop.setInterest(.readable, fd: fd)
        } catch {
            return close(failing: ConnectionFailure(ErrorKind.classify(error), "epoll: \(error)"))
        }
        state = .open
        owner._withUnsafeGuaranteedRef { $0.socketConnected() }
    }

    // MARK: Events

    /// What epoll reported for the socket (the owner's `handleIO(_:)`).
    @inline(__always)
    func handle(_ events: IOEvents) {
        switch state {
        case .open:
            // (The epoll bits themselves: IOEvents' static members are globals of another module, each read a call.)
            if events.rawValue & readEvents != 0 {
                receive()
            }
            if isBackedUp && state == .open && events.rawValue & (CEPOLL_OUT | CEPOLL_HUP | CEPOLL_ERR) != 0 {
                // Writable (or an error or hang-up, which the send reports).
                flush()
                if !isBackedUp && state == .open { owner._withUnsafeGuaranteedRef { $0.socketDrained() } }
            }
        case .draining:
            flush()
            if state == .draining && !isBackedUp { close(.closed) }
        case .connecting:
            connectFinished()
        case .idle, .closed:
            break
        }
    }

    /// The loop is going away with the run (the owner's `loopWillShutDown()`).
    func loopWillShutDown() {
        close(.loopShutDown)
    }

    // MARK: Traffic

    /// One `recv` (the loop is level-triggered and reports the rest), handed to the owner in place.
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
        owner._withUnsafeGuaranteedRef { $0.socketReceived(received) }
    }

    /// Sends `bytes` after those that wait: what the kernel does not take now waits in ``output``.
    @inline(__always)
    func send(_ bytes: UnsafeRawBufferPointer) {
        guard state == .open else { return }
        if isBackedUp {
            output.append(bytes)
            if !readsPaused && output.count > outputLimit { watch(backedUp: true, readsPaused: true) }
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
            sentBytes &+= UInt64(n)
        }
        guard offset < bytes.count else { return }
        output.append(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
        watch(backedUp: true, readsPaused: output.count > outputLimit)
    }

    /// Sends what waits in ``output`` until it is all sent or the kernel is full; only then is EPOLLOUT armed,
    /// and it is disarmed (EPOLLIN back) as soon as the bytes have drained (a socket with room would otherwise
    /// wake the loop forever).
    @inline(__always)
    func flush() {
        while !output.isEmpty {
            let result: IOResult<Int>
            do {
                result = try Syscall.send(fd, output.bytes)
            } catch {
                return close(failing: ConnectionFailure(error))
            }
            guard case .processed(let n) = result, n > 0 else {
                if !isBackedUp {
                    watch(backedUp: true, readsPaused: output.count > outputLimit)
                } else if readsPaused && state == .open && output.count <= outputLimit {
                    watch(backedUp: true, readsPaused: false)
                }
                return
            }
            output.consume(n)
            sentBytes &+= UInt64(n)
        }
        guard isBackedUp else { return }
        if state == .open {
            watch(backedUp: false, readsPaused: false)
        } else {
            isBackedUp = false
        }
    }

    /// Readable while reads are not paused, writable while bytes wait (a draining close has writable only).
    private func watch(backedUp: Bool, readsPaused: Bool) {
        let interest: IOEvents = readsPaused ? .writable : backedUp ? [.readable, .writable] : .readable
        do {
            try loop.setInterest(interest, fd: fd)
            isBackedUp = backedUp
            readEvents = readsPaused ? 0 : CEPOLL_IN | CEPOLL_HUP | CEPOLL_ERR
        } catch {
            close(failing: ConnectionFailure(ErrorKind.classify(error), "epoll: \(error)"))
        }
    }

    // MARK: Closing

    /// Closes the socket: at once, or, `afterWriting`, once the bytes that wait are sent (nothing more is read
    /// meanwhile, and the wait is bounded like a connect). Harmless when closed or closing already.
    func close(afterWriting: Bool = false) {
        switch state {
        case .open where afterWriting && isBackedUp:
            state = .draining
            watch(backedUp: true, readsPaused: true)
            guard state == .draining else { return }
            let seconds = worker.connectTimeout
            arm(seconds) { [unowned self] in
                guard state == .draining else { return }
                close(.closed)
            }
        case .connecting, .open, .draining:
            close(.closed)
        case .idle, .closed:
            break
        }
    }

    /// Ends the connection with `failure` (counted by the owner). Harmless when closed already.
    @inline(never)
    func close(failing failure: ConnectionFailure) {
        close(.failed(failure))
    }

    /// Closes the descriptor through the loop (exactly once) and tells the owner how the socket ended.
    private func close(_ end: LoopTCPSocketEnd) {
        guard state != .idle && state != .closed else { return }
        let wasOpen = state == .open || state == .draining
        state = .closed
        disarm()
        if case .closed = end, wasOpen, discardsUnreadInput { discardUnreadInput() }
        if fd >= 0 {
            try? loop.close(fd: fd)
            fd = -1
        }
        output.removeAll()
        isBackedUp = false
        readEvents = CEPOLL_IN | CEPOLL_HUP | CEPOLL_ERR
        owner._withUnsafeGuaranteedRef { $0.socketClosed(end, wasOpen: wasOpen) }
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
