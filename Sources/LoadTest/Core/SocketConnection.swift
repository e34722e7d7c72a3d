import LoopSocket

/// A connection through GCDAsyncSocket that connects once and is not replaced (stream, idle, TLS echo, and a
/// ``LoadProtocol``'s): it starts, stops, reports its TLS handshake and ends the same way, here once.
protocol SocketConnection: GCDAsyncSocketDelegate, LoadConnection {
    var worker: LoopWorker { get }
    var socket: GCDAsyncSocket? { get set }
    var state: LoadConnectionState { get set }
}

extension SocketConnection {
    /// Connects (with TLS queued when `--tls`).
    func start() {
        state = .connecting
        socket = worker.connectSocket(self)
        if socket == nil { state = .closed }
    }

    /// Disconnects without counting anything (the run is over).
    func stop() {
        guard state == .open || state == .connecting else { return }
        socket?.disconnect()
    }

    /// The TLS handshake is over: its time is recorded.
    func socketDidSecure(_ sock: GCDAsyncSocket) {
        worker.recordHandshake(sock)
    }

    /// The socket is gone: a connect that failed or an open connection closed, its error counted.
    func ended(_ sock: GCDAsyncSocket, error: (any Error)?) {
        guard sock === socket else { return }
        let previous = state
        state = .closed
        worker.connectionEnded(from: previous, error: error)
    }
}
