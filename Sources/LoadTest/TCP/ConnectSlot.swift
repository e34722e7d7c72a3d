import EpollLoop
import FoundationEssentials
import Glibc
import LoopSocket

/// One slot of connection churn: connect, send 64 bytes, wait for their echo, close, and again with a new
/// socket. A failed connect is counted by kind and retried after 1 ms (so a refused port is not a busy loop).
/// Latency is the whole connect-exchange-close cycle.
///
/// Open loop (`--rate`): a slot starts a cycle when the worker's schedule says so and is free again when it
/// ends; latency counts from the cycle's intended start, service time from its actual start. A failed cycle is
/// counted and not retried (the schedule goes on).
final class ConnectSlot: GCDAsyncSocketDelegate, PacedConnection {
    static let messageSize = 64

    unowned(unsafe) let worker: LoopWorker
    private var socket: GCDAsyncSocket?
    private var message = Data(count: ConnectSlot.messageSize)
    private var phase: UInt32 = 0
    private var startedAt: UInt64 = 0
    private var state = LoadConnectionState.idle
    private var closingOnPurpose = false
    private let openLoop: Bool
    /// Open loop: when the current cycle was meant to start.
    private var intendedAt: UInt64 = 0

    init(worker: LoopWorker) {
        self.worker = worker
        openLoop = worker.config.isOpenLoop
    }

    func start() {
        if !openLoop { next() }
    }

    var hasRoom: Bool { state == .idle || state == .closed }

    func sendPaced(intended: UInt64) {
        intendedAt = intended
        next()
    }

    func stop() {
        guard state == .open || state == .connecting else { return }
        socket?.disconnect()
    }

    private func next() {
        guard !worker.stopping else { return }
        let serial = worker.nextChurnSerial()
        phase = UInt32(serial % UInt64(Pattern.period))
        startedAt = Deadline.now().uptimeNanoseconds
        state = .connecting
        socket = worker.connectSocket(self, settling: false)
        if socket == nil {
            state = .closed
            if !openLoop { retryLater() }
        }
    }

    private func retryLater() {
        let deadline = Deadline.now().uptimeNanoseconds + 1_000_000
        _ = worker.loop.scheduleOnLoop(at: deadline) { [self] in next() }
    }

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        guard sock === socket else { return }
        state = .open
        worker.open += 1
        worker.established += 1
        let phase = self.phase
        message.withUnsafeMutableBytes { Pattern.shared.fillMessage($0, sequence: 0, phase: phase) }
        sock.write(message, withTimeout: -1, tag: 0)
        sock.readData(toLength: UInt(Self.messageSize), withTimeout: worker.replyTimeout, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        guard sock === socket else { return }
        let now = Deadline.now().uptimeNanoseconds
        let phase = self.phase
        guard data.withUnsafeBytes({ Pattern.shared.checkMessage($0, sequence: 0, phase: phase) }) else {
            worker.recordError(.mismatch, "churn echo did not match what was sent")
            sock.disconnect()
            return
        }
        if worker.config.closeWithReset {
            // SO_LINGER 0: close() sends RST and leaves no TIME_WAIT behind (as the C load generator does).
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(sock.socketFD(), SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        if openLoop {
            worker.recordPacedReply(
                latency: now &- intendedAt, service: now &- startedAt, bytes: Self.messageSize, now: now)
        } else {
            worker.recordReply(latency: now &- startedAt, bytes: Self.messageSize, now: now)
        }
        closingOnPurpose = true
        sock.disconnect()  // calls socketDidDisconnect at once, which starts the next cycle
    }

    func socketDidSecure(_ sock: GCDAsyncSocket) {
        worker.recordHandshake(sock)
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        guard sock === socket else { return }
        let previous = state
        state = .closed
        if previous == .open { worker.open -= 1 }
        if closingOnPurpose {
            closingOnPurpose = false
            if openLoop { paceIfDue() } else { next() }
            return
        }
        if let err {
            worker.recordError(ErrorKind.classify(err), "\(err)")
        }
        guard !worker.stopping else { return }
        if openLoop { paceIfDue() } else { retryLater() }
    }

    /// Open loop: the slot is free; cycles that were due while every slot was busy may start now.
    private func paceIfDue() {
        guard !worker.stopping else { return }
        let now = Deadline.now().uptimeNanoseconds
        if worker.nextPaceAt <= now { worker.pace(now: now) }
    }
}
