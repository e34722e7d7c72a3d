import EpollLoop
import Glibc

/// One echo connection, driven straight on the worker's event loop: a nonblocking socket registered with the
/// loop, fixed-size messages carrying a sequence number, each reply checked byte for byte.
///
/// A load generator is the yardstick for servers, so its own cost per request must stay out of the
/// measurement (the choice wrk makes): this class talks to the kernel itself instead of going through
/// GCDAsyncSocket's queues, delegate calls and per-read `Data`. A request is one `Deadline.now()`, one `recv`
/// into the loop's scratch buffer, a `memcmp`, a histogram increment, the next message written in place
/// into the connection's send buffer and one `send`; nothing is allocated.
///
/// Closed loop: `pipeline` messages in flight; each reply sends the next. Open loop: the worker's schedule
/// sends messages (``sendPaced(intended:)``) and latency counts from the intended time. Replies are timed out
/// by the worker's sweep (``expireRequests(sentBefore:)``), the connect by a loop timer.
///
/// The socket is a ``LoopTCPSocket`` (connect, reads, back-pressure and close); every failure closes it, once,
/// and is counted by ``ErrorKind``.
final class EchoConnection: LoopTCPSocketOwner, PacedConnection, SweptConnection {
    typealias Output = EchoSendBuffer

    // The worker outlives its connections (it holds them), hence unowned(unsafe): no reference counting.
    // (The hot path goes through `workerRef` instead: even an unowned(unsafe) reference is retained and
    // released around the code that uses it, which `_withUnsafeGuaranteedRef` avoids.)
    // The mutable state is loop-confined and never accessed across a call that could re-enter it, so it
    // opts out of dynamic exclusivity checks, each of which costs more than the bookkeeping it guards.
    unowned(unsafe) let worker: LoopWorker
    private let workerRef: Unmanaged<LoopWorker>
    /// ``Pattern/shared``, copied here so the hot path does not go through its lazy initialiser every time.
    private let pattern = Pattern.shared
    private let size: Int
    private let openLoop: Bool
    /// The socket, holding the messages the kernel has not taken yet (at most `pipeline` of them).
    private let socket: LoopTCPSocket<EchoConnection>
    @exclusivity(unchecked) private var reader: EchoReplyReader
    @exclusivity(unchecked) private var times: SendTimes
    /// Open loop: when each message actually went out (`times` holds when it was meant to), for service time.
    @exclusivity(unchecked) private var sentTimes: SendTimes
    /// The sequence number of the next message to queue.
    @exclusivity(unchecked) private var nextSend: UInt64 = 0
    /// Where that message starts in the pattern.
    @exclusivity(unchecked) private var sendCursor: Pattern.Cursor
    /// Bytes received back: a reply can never outrun the request (the socket counts the bytes sent).
    @exclusivity(unchecked) private var receivedBytes: UInt64 = 0

    init(worker: LoopWorker, number: Int) {
        self.worker = worker
        workerRef = Unmanaged.passUnretained(worker)
        let phase = Pattern.phase(of: number)
        size = worker.config.size
        openLoop = worker.config.isOpenLoop
        // Closed loop: at most `pipeline` messages are unanswered, so at most that many can be unsent. Open
        // loop: a connection whose previous message is still stuck in its buffer has no room (``hasRoom``),
        // and the schedule picks another one.
        socket = LoopTCPSocket(
            worker: worker, output: EchoSendBuffer(capacity: size * (openLoop ? 1 : worker.config.pipeline)))
        reader = EchoReplyReader(size: size, phase: phase)
        sendCursor = Pattern.Cursor(size: size, phase: phase)
        times = SendTimes(capacity: openLoop ? 1024 : worker.config.pipeline)
        sentTimes = SendTimes(capacity: openLoop ? 1024 : 1)
    }

    // MARK: Connecting

    func start() {
        socket.connect(for: self)
    }

    func socketConnected() {
        worker.connectionSettled(ok: true)
        guard !openLoop, !worker.stopping, socket.isOpen else { return }
        let now = Deadline.now().uptimeNanoseconds
        for _ in 0..<worker.config.pipeline { queueMessage(at: now) }
        socket.flush()
    }

    func handleIO(_ events: IOEvents) {
        socket.handle(events)
    }

    func loopWillShutDown() {
        socket.loopWillShutDown()
    }

    // MARK: LoadConnection

    func stop() {
        socket.close()
    }

    func expireRequests(sentBefore cutoff: UInt64) {
        guard socket.isOpen, nextSend != reader.sequence, times[reader.sequence] < cutoff else { return }
        fail(.timeout, "no echo reply within \(worker.config.timeout) s")
    }

    var hasRoom: Bool {
        socket.isOpen && nextSend &- reader.sequence < UInt64(times.capacity) && socket.output.hasRoom(for: size)
    }

    func sendPaced(intended: UInt64) {
        sentTimes[nextSend] = worker.paceNow
        queueMessage(at: intended)
        socket.flush()
    }

    // MARK: Traffic

    /// Room again: requests the schedule could not place meanwhile may go now.
    func socketDrained() {
        guard openLoop && !worker.stopping else { return }
        let now = Deadline.now().uptimeNanoseconds
        if worker.nextPaceAt <= now { worker.pace(now: now) }
    }

    /// Checks what has arrived (one `recv`: the loop is level-triggered and reports the rest), records each
    /// completed reply, and in the closed loop sends as many new messages, in one `send`.
    @inline(__always)
    func socketReceived(_ received: UnsafeRawBufferPointer) {
        workerRef._withUnsafeGuaranteedRef { receive(received, worker: $0) }
    }

    @inline(__always)
    private func receive(_ received: UnsafeRawBufferPointer, worker: LoopWorker) {
        let count = received.count
        let now = Deadline.now().uptimeNanoseconds
        let expected = Int(min(UInt64(count), socket.sentBytes &- receivedBytes))
        let first = reader.sequence
        // The pointer and count directly: `prefix` is a generic call the optimizer leaves out of line.
        let intact = reader.read(UnsafeRawBufferPointer(start: received.baseAddress, count: expected))
        receivedBytes &+= UInt64(expected)
        var sequence = first
        if openLoop {
            while sequence != reader.sequence {
                worker.recordPacedReply(
                    latency: now &- times[sequence], service: now &- sentTimes[sequence], bytes: size, now: now)
                sequence &+= 1
            }
        } else {
            while sequence != reader.sequence {
                worker.recordReply(latency: now &- times[sequence], bytes: size, now: now)
                sequence &+= 1
            }
        }
        guard intact else {
            fail(.mismatch, "echo reply \(reader.sequence) on a connection did not match what was sent")
            return
        }
        guard count == expected else {
            fail(.mismatch, "the server sent bytes nobody asked for")
            return
        }
        if worker.stopping { return }
        if openLoop {
            if worker.nextPaceAt <= now { worker.pace(now: now) }
        } else if sequence != first {
            for _ in 0..<(sequence &- first) { queueMessage(at: now) }
            socket.flush()
        }
    }

    /// Writes the next message into the send buffer, in place, and notes its (intended) send time.
    @inline(__always)
    private func queueMessage(at time: UInt64) {
        times[nextSend] = time
        let sequence = nextSend
        let source = sendCursor.start(in: pattern)
        socket.output.append(size) { pattern.fillMessage($0, sequence: sequence, from: source) }
        nextSend &+= 1
        sendCursor.advance()
    }

    // MARK: Closing

    /// Closes the connection, counting `kind` (unless the run is over).
    @inline(never)
    private func fail(_ kind: ErrorKind, _ message: @autoclosure () -> String) {
        socket.close(failing: ConnectionFailure(kind, message()))
    }

    /// Counts the failure that closed the socket, if any, and tells the worker: a connect that failed, or an
    /// open connection gone.
    func socketClosed(_ end: LoopTCPSocketEnd, wasOpen: Bool) {
        if let failure = end.failure { worker.recordError(failure.kind, failure.message) }
        if wasOpen {
            worker.connectionClosed()
        } else {
            worker.connectionSettled(ok: false)
        }
    }
}
