import EpollLoop
import FoundationEssentials
import LoopSocket

/// One bulk-transfer connection through an echo server: writes 64 KiB chunks of its pattern stream while
/// less than 256 KiB is unechoed, reads whatever comes back and checks every byte.
final class StreamConnection: GCDAsyncSocketDelegate, LoadConnection {
    static let chunk = 64 * 1024
    static let inFlight = 256 * 1024

    unowned(unsafe) let worker: LoopWorker
    private var socket: GCDAsyncSocket?
    private let phase: UInt32
    private var sent: UInt64 = 0
    private var received: UInt64 = 0
    private var state = ConnectionState.idle

    init(worker: LoopWorker, number: Int) {
        self.worker = worker
        phase = Pattern.phase(of: number)
    }

    func start() {
        state = .connecting
        socket = worker.connectSocket(self)
        if socket == nil { state = .closed }
    }

    func stop() {
        guard state == .open || state == .connecting else { return }
        socket?.disconnect()
    }

    private func fillWrites(_ sock: GCDAsyncSocket) {
        while sent - received + UInt64(Self.chunk) <= UInt64(Self.inFlight) {
            sock.write(Pattern.shared.streamChunk(offset: sent, phase: phase, count: Self.chunk), withTimeout: -1, tag: 0)
            sent += UInt64(Self.chunk)
        }
    }

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        state = .open
        worker.connectionSettled(ok: true)
        guard !worker.stopping else { return }
        fillWrites(sock)
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
        worker.recordBytes(data.count, now: now)
        guard !worker.stopping else { return }
        fillWrites(sock)
        sock.readData(withTimeout: worker.replyTimeout, tag: 0)
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
