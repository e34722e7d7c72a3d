import EpollLoop
import FoundationEssentials
import LoopSocket

/// One bulk-transfer connection through an echo server, checking every byte that comes back.
///
/// Closed loop: writes 64 KiB chunks of its pattern stream while less than 256 KiB is unechoed (throughput).
/// Open loop (`--rate`): writes one `--size` chunk whenever the worker's schedule says so, and times each
/// chunk from its intended (and its actual) send until its last byte is echoed.
final class StreamConnection: SocketConnection, PacedConnection, SweptConnection {
    static let chunk = 64 * 1024
    static let inFlight = 256 * 1024
    /// Open loop: unechoed bytes a connection may have before the schedule passes it by.
    static let openLoopInFlight = 4 * 1024 * 1024

    unowned(unsafe) let worker: LoopWorker
    var socket: GCDAsyncSocket?
    private let phase: UInt32
    private var sent: UInt64 = 0
    private var received: UInt64 = 0
    var state = LoadConnectionState.idle
    // Open loop: the chunks in flight, by sequence number.
    private let openLoop: Bool
    private let size: UInt64
    private var times: SendTimes
    private var sentTimes: SendTimes
    private var nextSend: UInt64 = 0
    private var nextReceive: UInt64 = 0

    init(worker: LoopWorker, number: Int) {
        self.worker = worker
        phase = Pattern.phase(of: number)
        openLoop = worker.config.isOpenLoop
        size = UInt64(worker.config.size)
        times = SendTimes(capacity: openLoop ? 1024 : 1)
        sentTimes = SendTimes(capacity: openLoop ? 1024 : 1)
    }

    private func fillWrites(_ sock: GCDAsyncSocket) {
        while sent - received + UInt64(Self.chunk) <= UInt64(Self.inFlight) {
            sock.write(
                Pattern.shared.streamChunk(offset: sent, phase: phase, count: Self.chunk), withTimeout: -1, tag: 0)
            sent += UInt64(Self.chunk)
        }
    }

    // MARK: Open loop

    var hasRoom: Bool {
        state == .open && nextSend &- nextReceive < UInt64(times.capacity)
            && sent - received + size <= max(UInt64(Self.openLoopInFlight), size)
    }

    func sendPaced(intended: UInt64) {
        guard let socket else { return }
        times[nextSend] = intended
        sentTimes[nextSend] = worker.paceNow
        nextSend &+= 1
        socket.write(Pattern.shared.streamChunk(offset: sent, phase: phase, count: Int(size)), withTimeout: -1, tag: 0)
        sent += size
    }

    /// Open loop only (closed-loop streams time out by their socket reads): a chunk unechoed too long.
    func expireRequests(sentBefore cutoff: UInt64) {
        guard state == .open, nextSend != nextReceive, times[nextReceive] < cutoff, let socket else { return }
        worker.recordError(.timeout, "a streamed chunk was not echoed within \(worker.config.timeout) s")
        socket.disconnect()
    }

    // MARK: GCDAsyncSocketDelegate

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        state = .open
        worker.connectionSettled(ok: true)
        guard !worker.stopping else { return }
        if !openLoop { fillWrites(sock) }
        sock.readData(withTimeout: worker.replyTimeout, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        let now = Deadline.now().uptimeNanoseconds
        let offset = received
        let phase = self.phase
        guard UInt64(data.count) <= sent - received,
              data.withUnsafeBytes({ Pattern.shared.checkStream($0, offset: offset, phase: phase) }) else {
            worker.recordError(.mismatch, "streamed bytes at offset \(offset) did not match what was sent")
            sock.disconnect()
            return
        }
        received += UInt64(data.count)
        if openLoop {
            // A chunk is done when its last byte is back.
            while nextReceive != nextSend && received >= (nextReceive &+ 1) &* size {
                worker.recordPacedReply(latency: now &- times[nextReceive], service: now &- sentTimes[nextReceive],
                                        bytes: Int(size), now: now)
                nextReceive &+= 1
            }
        } else {
            worker.recordBytes(data.count, now: now)
        }
        guard !worker.stopping else { return }
        if openLoop {
            if worker.nextPaceAt <= now { worker.pace(now: now) }
        } else {
            fillWrites(sock)
        }
        sock.readData(withTimeout: worker.replyTimeout, tag: 0)
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        ended(sock, error: err)
    }
}
