import CEpollShim
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
/// Every failure closes the descriptor through the loop, once, and is counted by ``ErrorKind``.
final class EchoConnection: LoopIOHandler, PacedConnection, SweptConnection {
    // The worker outlives its connections (it holds them), hence unowned(unsafe): no reference counting.
    // (The hot path goes through `workerRef` instead: even an unowned(unsafe) reference is retained and
    // released around the code that uses it, which `_withUnsafeGuaranteedRef` avoids.)
    // The mutable state is loop-confined and never accessed across a call that could re-enter it, so it
    // opts out of dynamic exclusivity checks, each of which costs more than the bookkeeping it guards.
    unowned(unsafe) let worker: LoopWorker
    private let workerRef: Unmanaged<LoopWorker>
    /// ``Pattern/shared``, copied here so the hot path does not go through its lazy initialiser every time.
    private let pattern = Pattern.shared
    private let phase: UInt32
    private let size: Int
    private let openLoop: Bool
    @exclusivity(unchecked) private var state = LoadConnectionState.idle
    @exclusivity(unchecked) private var fd: Int32 = -1
    /// Whether EPOLLOUT is in the interest set: only while a send is waiting for room in the kernel.
    @exclusivity(unchecked) private var writableArmed = false
    @exclusivity(unchecked) private var connectTimer = TimerID.invalid
    @exclusivity(unchecked) private var output: EchoSendBuffer
    @exclusivity(unchecked) private var reader: EchoReplyReader
    @exclusivity(unchecked) private var times: SendTimes
    /// Open loop: when each message actually went out (`times` holds when it was meant to), for service time.
    @exclusivity(unchecked) private var sentTimes: SendTimes
    /// The sequence number of the next message to queue.
    @exclusivity(unchecked) private var nextSend: UInt64 = 0
    /// Bytes handed to the kernel, and bytes received back: a reply can never outrun the request.
    @exclusivity(unchecked) private var sentBytes: UInt64 = 0
    @exclusivity(unchecked) private var receivedBytes: UInt64 = 0

    init(worker: LoopWorker, number: Int) {
        self.worker = worker
        workerRef = Unmanaged.passUnretained(worker)
        phase = Pattern.phase(of: number)
        size = worker.config.size
        openLoop = worker.config.isOpenLoop
        // Closed loop: at most `pipeline` messages are unanswered, so at most that many can be unsent. Open
        // loop: a connection whose previous message is still stuck in its buffer has no room (``hasRoom``),
        // and the schedule picks another one.
        output = EchoSendBuffer(capacity: size * (openLoop ? 1 : worker.config.pipeline))
        reader = EchoReplyReader(size: size, phase: phase)
        times = SendTimes(capacity: openLoop ? 1024 : worker.config.pipeline)
        sentTimes = SendTimes(capacity: openLoop ? 1024 : 1)
    }

    deinit {
        output.deallocate()
    }

    private var loop: EventLoop { worker.loop }

    // MARK: Connecting

    func start() {
        state = .connecting
        guard let address = worker.address else {
            fail(.other, "connect: no resolved address for \(worker.config.host)")
            return
        }
        do {
            fd = try LoopConnect.start(address, loop: loop, handler: self)
        } catch {
            fail(error.kind, error.message)
            return
        }
        let timeout = LoadRunner.nanos(worker.connectTimeout)
        connectTimer = loop.scheduleOnLoop(at: Deadline.now().uptimeNanoseconds &+ timeout) { [unowned self] in
            self.connectTimer = .invalid
            guard self.state == .connecting else { return }
            self.fail(.connectTimeout, "connect: no answer within \(self.worker.connectTimeout) s")
        }
    }

    /// The socket became writable (or failed) while connecting: `SO_ERROR` says which.
    private func connectFinished() {
        if let failure = LoopConnect.failure(of: fd) {
            fail(failure.kind, failure.message)
            return
        }
        loop.cancelOnLoop(connectTimer)
        connectTimer = .invalid
        do {
            try loop.setInterest(.readable, fd: fd)
        } catch {
            fail(ErrorKind.classify(error), "epoll: \(error)")
            return
        }
        state = .open
        worker.connectionSettled(ok: true)
        guard !openLoop, !worker.stopping, state == .open else { return }
        let now = Deadline.now().uptimeNanoseconds
        for _ in 0..<worker.config.pipeline { queueMessage(at: now) }
        flush()
    }

    // MARK: LoadConnection

    func stop() {
        close()
    }

    func expireRequests(sentBefore cutoff: UInt64) {
        guard state == .open, nextSend != reader.sequence, times[reader.sequence] < cutoff else { return }
        fail(.timeout, "no echo reply within \(worker.config.timeout) s")
    }

    var hasRoom: Bool {
        state == .open && nextSend &- reader.sequence < UInt64(times.capacity) && output.hasRoom(for: size)
    }

    func sendPaced(intended: UInt64) {
        sentTimes[nextSend] = worker.paceNow
        queueMessage(at: intended)
        flush()
    }

    // MARK: LoopIOHandler

    func handleIO(_ events: IOEvents) {
        switch state {
        case .open:
            // Hang-ups and errors are read too: recv reports them (0 or the error) in order after the data.
            // (The epoll bits themselves: IOEvents' static members are globals of another module, each read a call.)
            if events.rawValue & (CEPOLL_IN | CEPOLL_HUP | CEPOLL_ERR) != 0 {
                receive()
            }
            if writableArmed && state == .open && events.contains(.writable) {
                flush()
                // Room again: requests the schedule could not place meanwhile may go now.
                if openLoop && !writableArmed && state == .open && !worker.stopping {
                    let now = Deadline.now().uptimeNanoseconds
                    if worker.nextPaceAt <= now { worker.pace(now: now) }
                }
            }
        case .connecting:
            connectFinished()
        case .idle, .closed:
            break
        }
    }

    func loopWillShutDown() {
        close()
    }

    // MARK: Traffic

    /// Reads what has arrived (one `recv`: the loop is level-triggered and reports the rest), checks it,
    /// records each completed reply, and in the closed loop sends as many new messages, in one `send`.
    @inline(__always)
    private func receive() {
        workerRef._withUnsafeGuaranteedRef { receive(worker: $0) }
    }

    @inline(__always)
    private func receive(worker: LoopWorker) {
        let received: UnsafeRawBufferPointer
        do {
            guard let bytes = try worker.receive(on: fd) else { return }
            received = bytes
        } catch {
            fail(ErrorKind.classify(error), "\(error)")
            return
        }
        let count = received.count
        guard count > 0 else {
            fail(.closed, "the server closed the connection")
            return
        }
        let now = Deadline.now().uptimeNanoseconds
        let expected = Int(min(UInt64(count), sentBytes &- receivedBytes))
        let first = reader.sequence
        let intact = reader.read(UnsafeRawBufferPointer(rebasing: received.prefix(expected)))
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
            flush()
        }
    }

    /// Writes the next message into the send buffer, in place, and notes its (intended) send time.
    @inline(__always)
    private func queueMessage(at time: UInt64) {
        times[nextSend] = time
        let sequence = nextSend
        let phase = self.phase
        let pattern = self.pattern
        output.append(size) { pattern.fillMessage($0, sequence: sequence, phase: phase) }
        nextSend &+= 1
    }

    /// Sends what is queued until it is all sent or the kernel is full; only then is EPOLLOUT armed, and it is
    /// disarmed as soon as the buffer has drained (a socket with room would otherwise wake the loop forever).
    @inline(__always)
    private func flush() {
        while !output.isEmpty {
            let result: IOResult<Int>
            do {
                result = try Syscall.send(fd, output.unsent)
            } catch {
                fail(ErrorKind.classify(error), "\(error)")
                return
            }
            guard case .processed(let n) = result, n > 0 else {
                if !writableArmed { watchWritable(true) }
                return
            }
            output.consume(n)
            sentBytes &+= UInt64(n)
        }
        if writableArmed { watchWritable(false) }
    }

    private func watchWritable(_ on: Bool) {
        do {
            try loop.setInterest(on ? [.readable, .writable] : .readable, fd: fd)
            writableArmed = on
        } catch {
            fail(ErrorKind.classify(error), "epoll: \(error)")
        }
    }

    // MARK: Closing

    /// Counts `kind` (unless the run is over) and closes the connection.
    @inline(never)
    private func fail(_ kind: ErrorKind, _ message: @autoclosure () -> String) {
        worker.recordError(kind, message())
        close()
    }

    /// Closes the descriptor through the loop (exactly once) and tells the worker: a connect that failed, or
    /// an open connection gone. Harmless when already closed.
    private func close() {
        let previous = state
        guard previous == .connecting || previous == .open else { return }
        state = .closed
        loop.cancelOnLoop(connectTimer)
        connectTimer = .invalid
        if fd >= 0 {
            try? loop.close(fd: fd)
            fd = -1
        }
        writableArmed = false
        if previous == .connecting {
            worker.connectionSettled(ok: false)
        } else {
            worker.connectionClosed()
        }
    }
}
