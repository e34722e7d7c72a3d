import EpollLoop
import FoundationEssentials
import LoopSocket

/// One connection opened and held: it sends nothing and keeps a read queued only to notice the server
/// closing it (any server will do, not only echo).
final class IdleConnection: SocketConnection {
    unowned(unsafe) let worker: LoopWorker
    var socket: GCDAsyncSocket?
    var state = LoadConnectionState.idle

    init(worker: LoopWorker) {
        self.worker = worker
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

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        ended(sock, error: err)
    }
}
