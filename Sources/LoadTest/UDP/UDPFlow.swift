import CEpollShim
import EpollLoop
import Glibc

/// One UDP flow of `loadtest udp`: a connected datagram socket on the worker's loop, sending datagrams of
/// `--size` bytes to an echo server and checking every echo.
///
/// Like ``EchoConnection`` it talks to the kernel itself (one `send` per datagram, `recv` until `EAGAIN` per
/// readiness event, replies checked in the loop's scratch buffer): the generator must cost less per datagram
/// than the server it measures, and nothing on this path allocates.
///
/// Each datagram is the flow's pattern stream at `sequence · size` with the sequence number in its first 8
/// bytes (``Pattern/fillMessage(_:sequence:phase:)``), so an echo says which datagram it answers and whether
/// its bytes are intact; the send time stays here, in a ring of slots indexed by sequence (each slot holds the
/// sequence it waits for, so a slot reused by a later datagram cannot be mistaken for an earlier one). An echo
/// of a datagram in flight completes it (a latency sample); one that arrives after a later datagram of its
/// flow was echoed is **reordered**; an echo of a datagram not in flight (echoed already, or counted lost) is
/// a **duplicate**. A datagram not echoed within `--timeout` is **lost**: the worker's sweep finds it at the
/// front of the ring (send times grow with the sequence), no timer per datagram. So is one still unanswered
/// when its slot comes round again, `ring` datagrams later (at least 64, and 8 per `--pipeline`): long
/// overtaken. Closed loop: `--pipeline` datagrams in flight; each completion or loss sends the next, so a lossy
/// path slows a flow but never stalls it. Open loop: the worker's schedule sends (``sendPaced(intended:)``),
/// while the next slot is free.
///
/// `ECONNREFUSED` (the ICMP error of a connected socket whose server is gone) and other send errors are
/// counted and the flow goes on; a full socket buffer (`EAGAIN`/`ENOBUFS`) drops that datagram, counted as
/// a send error, as a real sender would see it.
final class UDPFlow: LoopIOHandler, PacedConnection, SweptConnection {
    unowned(unsafe) let worker: LoopWorker
    /// The loop's datagram counters.
    unowned(unsafe) let shared: UDPLoop
    private let workerRef: Unmanaged<LoopWorker>
    private let pattern = Pattern.shared
    private let phase: UInt32
    private let size: Int
    private let openLoop: Bool
    /// The datagram being built: one per flow, rewritten for every send.
    private let outgoing: UnsafeMutableRawBufferPointer
    @exclusivity(unchecked) private var fd: Int32 = -1
    @exclusivity(unchecked) private var isOpen = false
    /// When each datagram in flight was (meant to be) sent; and, open loop, when it actually went out.
    @exclusivity(unchecked) private var times: SendTimes
    @exclusivity(unchecked) private var sentTimes: SendTimes
    /// The sequence each slot waits for, and whether it still waits (in flight: neither echoed nor lost).
    @exclusivity(unchecked) private var waitingFor: [UInt64]
    @exclusivity(unchecked) private var waiting: [Bool]
    /// Below `base` nothing is in flight; `nextSend` is the next sequence; `highest` the highest echoed plus one.
    @exclusivity(unchecked) private var base: UInt64 = 0
    @exclusivity(unchecked) private var nextSend: UInt64 = 0
    @exclusivity(unchecked) private var highest: UInt64 = 0

    init(shared: UDPLoop, number: Int) {
        self.shared = shared
        let worker = shared.worker
        self.worker = worker
        workerRef = Unmanaged.passUnretained(worker)
        phase = Pattern.phase(of: number)
        size = worker.config.size
        openLoop = worker.config.isOpenLoop
        outgoing = .allocate(byteCount: size, alignment: 16)
        times = SendTimes(capacity: openLoop ? 1024 : max(64, 8 * worker.config.pipeline))
        sentTimes = SendTimes(capacity: openLoop ? 1024 : 1)
        waitingFor = Array(repeating: 0, count: times.capacity)
        waiting = Array(repeating: false, count: times.capacity)
    }

    deinit {
        outgoing.deallocate()
    }

    private var loop: EventLoop { worker.loop }

    // MARK: Opening

    /// Opens the socket and connects it (a local operation for UDP: it fixes the peer, so `send` needs no
    /// address and the kernel filters out datagrams from anyone else), then starts the closed loop.
    func start() {
        guard let address = worker.address else {
            fail("connect: no resolved address for \(worker.config.host)")
            return
        }
        let socket: Int32
        do {
            socket = try Syscall.socket(domain: address.family, type: CEPOLL_SOCK_DGRAM)
            _ = try address.withSockaddr { (sockaddr, length) throws(SyscallError) in
                try Syscall.connect(socket, sockaddr, length)
            }
        } catch {
            fail("udp socket: \(error)")
            return
        }
        do {
            try loop.register(fd: socket, interest: .readable, handler: self)
        } catch {
            try? Syscall.close(socket)
            fail("register: \(error)")
            return
        }
        fd = socket
        isOpen = true
        worker.connectionSettled(ok: true)
        guard !openLoop, !worker.stopping else { return }
        let now = Deadline.now().uptimeNanoseconds
        for _ in 0..<worker.config.pipeline { send(at: now) }
    }

    // MARK: LoadConnection

    func stop() {
        close()
    }

    /// Counts every datagram in flight sent before `cutoff` as lost and, closed loop, sends one in its place.
    func expireRequests(sentBefore cutoff: UInt64) {
        guard isOpen else { return }
        let now = Deadline.now().uptimeNanoseconds
        var replaced = 0
        while base != nextSend && (!isWaiting(base) || times[base] < cutoff) {
            if isWaiting(base) {
                waiting[slot(base)] = false
                shared.recordDatagramLost(now: now)
                replaced += 1
            }
            base &+= 1
        }
        guard !openLoop, !worker.stopping else { return }
        for _ in 0..<replaced { send(at: now) }
    }

    var hasRoom: Bool { isOpen && !waiting[slot(nextSend)] }

    func sendPaced(intended: UInt64) {
        sentTimes[nextSend] = worker.paceNow
        send(at: intended)
    }

    // MARK: LoopIOHandler

    func handleIO(_ events: IOEvents) {
        guard isOpen else { return }
        workerRef._withUnsafeGuaranteedRef { receive(worker: $0) }
    }

    func loopWillShutDown() {
        close()
    }

    // MARK: Traffic

    @inline(__always)
    private func slot(_ sequence: UInt64) -> Int { Int(sequence & times.mask) }

    /// Whether `sequence` is in flight.
    @inline(__always)
    private func isWaiting(_ sequence: UInt64) -> Bool {
        let i = slot(sequence)
        return waiting[i] && waitingFor[i] == sequence
    }

    /// Receives until the socket is empty, checking and recording each echo; closed loop, each completion
    /// sends the next datagram at once.
    private func receive(worker: LoopWorker) {
        while isOpen {
            let datagram: UnsafeRawBufferPointer
            do {
                guard let bytes = try worker.receive(on: fd) else { return }
                datagram = bytes
            } catch {
                worker.recordError(ErrorKind.classify(error), "recv: \(error)")
                // A connected UDP socket reports an ICMP error (the server's port closed) once, on the next
                // call, and then reads on. Any other error could repeat: wait for the next readiness event
                // instead of spinning here.
                if error.errno == .connectionRefused { continue }
                return
            }
            let now = Deadline.now().uptimeNanoseconds
            guard datagram.count == size else {
                shared.recordDatagramCorrupt(
                    now: now, "an echo of \(datagram.count) bytes arrived on a flow sending \(size)-byte datagrams")
                continue
            }
            let sequence = UInt64(littleEndian: datagram.loadUnaligned(as: UInt64.self))
            guard isWaiting(sequence) else {
                shared.recordDatagramDuplicate(now: now)
                continue
            }
            guard
                pattern.checkMessage(datagram, sequence: sequence, phase: phase)
            else {
                shared.recordDatagramCorrupt(now: now, "echo \(sequence) of a flow did not match the datagram sent")
                continue
            }
            waiting[slot(sequence)] = false
            if sequence < highest {
                shared.recordDatagramReordered(now: now)
            } else {
                highest = sequence &+ 1
            }
            if openLoop {
                worker.recordPacedReply(
                    latency: now &- times[sequence], service: now &- sentTimes[sequence], bytes: size, now: now)
            } else {
                worker.recordReply(latency: now &- times[sequence], bytes: size, now: now)
            }
            while base != nextSend && !isWaiting(base) { base &+= 1 }
            if worker.stopping { continue }
            if openLoop {
                if worker.nextPaceAt <= now { worker.pace(now: now) }
            } else {
                send(at: now)
            }
        }
    }

    /// Sends the next datagram, noting its (intended) send time. A datagram the kernel refuses is dropped and
    /// counted (it stays in the window and is counted lost too, as any datagram that never came back).
    @inline(__always)
    private func send(at time: UInt64) {
        let sequence = nextSend
        let i = slot(sequence)
        if waiting[i] {
            // Still unanswered a whole ring later: long overtaken, lost.
            shared.recordDatagramLost(now: time)
            while base != nextSend && (base == waitingFor[i] || !isWaiting(base)) { base &+= 1 }
        }
        times[sequence] = time
        waitingFor[i] = sequence
        waiting[i] = true
        nextSend &+= 1
        shared.recordDatagramSent(at: time)
        pattern.fillMessage(outgoing, sequence: sequence, phase: phase)
        do {
            if case .wouldBlock = try Syscall.send(fd, UnsafeRawBufferPointer(outgoing)) {
                worker.recordError(.other, "send: the socket buffer is full (EAGAIN)")
            }
        } catch {
            worker.recordError(ErrorKind.classify(error), "send: \(error)")
        }
    }

    // MARK: Closing

    private func fail(_ message: String) {
        worker.recordError(.other, message)
        worker.connectionSettled(ok: false)
    }

    /// Closes the socket through the loop, once.
    private func close() {
        guard isOpen else { return }
        isOpen = false
        if fd >= 0 {
            try? loop.close(fd: fd)
            fd = -1
        }
        worker.connectionClosed()
    }
}
