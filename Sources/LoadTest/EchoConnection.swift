import EpollLoop
import FoundationEssentials
import LoopSocket

/// Where a client connection is in its life.
enum ConnectionState {
    case idle, connecting, open, closed
}

/// Send times of the requests in flight, a power-of-two ring indexed by sequence number.
struct SendTimes {
    private var times: [UInt64]
    let mask: UInt64

    init(capacity: Int) {
        var size = 1
        while size < capacity { size <<= 1 }
        times = Array(repeating: 0, count: size)
        mask = UInt64(size - 1)
    }

    var capacity: Int { times.count }

    @inline(__always)
    subscript(sequence: UInt64) -> UInt64 {
        get { times.withUnsafeBufferPointer { $0[Int(sequence & mask)] } }
        set { times.withUnsafeMutableBufferPointer { $0[Int(sequence & mask)] = newValue } }
    }
}

/// One echo connection: fixed-size messages carrying a sequence number, each reply checked byte for byte.
///
/// Closed loop: `pipeline` messages in flight; each reply sends the next. Open loop: the worker's schedule
/// sends messages (``sendPaced(intended:)``) and latency counts from the intended time. Callbacks run inline
/// on the worker's loop; the hot path is one `Deadline.now()`, a compare, a histogram increment, one write
/// and one read, and reuses the message buffer (no allocation besides the `Data` LoopSocket delivers).
final class EchoConnection: GCDAsyncSocketDelegate, PacedConnection, SweptConnection {
    // The worker outlives its connections (it holds them), hence unowned(unsafe): no reference counting.
    // The mutable state is loop-confined and never accessed across a call that could re-enter it, so it
    // opts out of dynamic exclusivity checks, which otherwise cost more per request than the rest of this class.
    unowned(unsafe) let worker: LoopWorker
    @exclusivity(unchecked) private var socket: GCDAsyncSocket?
    private let phase: UInt32
    private let size: Int
    private let openLoop: Bool
    /// The message buffer, rewritten in place for each request: once the socket has written a message it
    /// drops its reference, so the buffer is uniquely ours again and the rewrite allocates nothing (with
    /// several requests in flight, copy-on-write gives each its own buffer).
    @exclusivity(unchecked) private var message: Data
    @exclusivity(unchecked) private var times: SendTimes
    @exclusivity(unchecked) private var nextSend: UInt64 = 0
    @exclusivity(unchecked) private var nextReceive: UInt64 = 0
    @exclusivity(unchecked) private var readQueued = false
    @exclusivity(unchecked) private var state = ConnectionState.idle

    init(worker: LoopWorker, number: Int) {
        self.worker = worker
        phase = Pattern.phase(of: number)
        size = worker.config.size
        openLoop = worker.config.isOpenLoop
        message = Data(count: size)
        times = SendTimes(capacity: openLoop ? 1024 : worker.config.pipeline)
    }

    func start() {
        let socket = GCDAsyncSocket(delegate: self, delegateQueue: nil, loop: worker.loop)
        self.socket = socket
        state = .connecting
        do {
            try socket.connect(toHost: worker.config.host, onPort: worker.config.port, withTimeout: worker.connectTimeout)
        } catch {
            state = .closed
            worker.recordError(ErrorKind.classify(error), "connect: \(error)")
            worker.connectionSettled(ok: false)
        }
    }

    func stop() {
        guard state == .open || state == .connecting else { return }
        socket?.disconnect()
    }

    func expireRequests(sentBefore cutoff: UInt64) {
        guard state == .open, nextSend != nextReceive, times[nextReceive] < cutoff, let socket else { return }
        worker.recordError(.timeout, "no echo reply within \(worker.config.timeout) s")
        socket.disconnect()
    }

    var hasRoom: Bool { state == .open && nextSend &- nextReceive < UInt64(times.capacity) }

    func sendPaced(intended: UInt64) {
        guard let socket else { return }
        send(on: socket, at: intended)
    }

    @inline(__always)
    private func send(on socket: GCDAsyncSocket, at time: UInt64) {
        times[nextSend] = time
        let sequence = nextSend
        let phase = self.phase
        message.withUnsafeMutableBytes { Pattern.shared.fillMessage($0, sequence: sequence, phase: phase) }
        nextSend &+= 1
        socket.write(message, withTimeout: -1, tag: 0)
        if !readQueued {
            readQueued = true
            socket.readData(toLength: UInt(size), withTimeout: worker.replyTimeout, tag: 0)
        }
    }

    // MARK: Delegate

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        state = .open
        worker.connectionSettled(ok: true)
        guard !openLoop, !worker.stopping else { return }
        let now = Deadline.now().uptimeNanoseconds
        for _ in 0..<worker.config.pipeline { send(on: sock, at: now) }
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        let now = Deadline.now().uptimeNanoseconds
        readQueued = false
        let sequence = nextReceive
        let phase = self.phase
        guard nextSend != nextReceive else {
            worker.recordError(.mismatch, "the server sent bytes nobody asked for")
            sock.disconnect()
            return
        }
        let intact = data.withUnsafeBytes { Pattern.shared.checkMessage($0, sequence: sequence, phase: phase) }
        guard intact else {
            worker.recordError(.mismatch, "echo reply \(sequence) on a connection did not match what was sent")
            sock.disconnect()
            return
        }
        let sentAt = times[sequence]
        nextReceive &+= 1
        worker.recordReply(latency: now &- sentAt, bytes: size, now: now)
        if worker.stopping { return }
        if openLoop {
            if worker.nextPaceAt <= now { worker.pace(now: now) }
        } else {
            send(on: sock, at: now)
        }
        // A read stays queued even with nothing in flight (open loop): the socket then keeps its epoll
        // interest instead of dropping and re-adding EPOLLIN around every request (two epoll_ctl calls).
        // Replies are timed out by the worker's sweep, so an idle queued read arms no timer.
        if !readQueued {
            readQueued = true
            sock.readData(toLength: UInt(size), withTimeout: worker.replyTimeout, tag: 0)
        }
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        let previous = state
        state = .closed
        if previous == .connecting {
            worker.connectionSettled(ok: false)
        } else if previous == .open {
            worker.connectionClosed()
        }
        if let err { worker.recordError(ErrorKind.classify(err), "\(err)") }
    }
}
