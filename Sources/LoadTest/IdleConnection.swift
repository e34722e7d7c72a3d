import EpollLoop
import FoundationEssentials
import LoopSocket

/// One connection opened and held: it sends nothing and keeps a read queued only to notice the server
/// closing it (any server will do, not only echo).
final class IdleConnection: GCDAsyncSocketDelegate, LoadConnection {
    unowned(unsafe) let worker: LoopWorker
    private var socket: GCDAsyncSocket?
    private var state = ConnectionState.idle

    init(worker: LoopWorker) {
        self.worker = worker
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

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        state = .open
        worker.connectionSettled(ok: true)
        sock.readData(withTimeout: -1, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        worker.recordBytes(data.count, now: Deadline.now().uptimeNanoseconds)
        sock.readData(withTimeout: -1, tag: 0)
    }

    func socketDidSecure(_ sock: GCDAsyncSocket) {
        worker.recordHandshake(sock)
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        let previous = state
        state = .closed
        worker.connectionEnded(from: previous, error: err)
    }
}
