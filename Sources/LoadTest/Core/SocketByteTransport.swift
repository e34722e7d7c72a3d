import EpollLoop
import FoundationEssentials
import LoopSocket

/// What a connection whose bytes go over a ``SocketByteTransport`` hears, on the loop.
protocol ByteTransportOwner: AnyObject {
    /// The TCP connection is up (with TLS, bytes written now wait behind the handshake).
    func transportConnected()
    /// The server's bytes, valid during the call.
    func transportReceived(_ bytes: UnsafeRawBufferPointer)
    /// The connection is gone, once per ``SocketByteTransport/connect()``: `failure` says why, nil when this
    /// side closed it. Never called from inside a call into the transport (it is queued on the loop), so the
    /// owner may connect again from it without pulling its state from under a read still being parsed.
    func transportClosed(_ failure: ConnectionFailure?)
}

/// The TLS transport of the connections that parse bytes themselves (`wss://`, `https://`): GCDAsyncSocket,
/// which does the TLS (its handshake queued at once and timed by the worker, ``LoopWorker/recordHandshake(_:)``).
/// Each read hands the owner the socket's `Data`; each write copies the bytes into one. (Plaintext can go this
/// way too, for tests that hold both transports to the same cases: ``WebSocketSettings/socketTransport``.)
///
/// Plaintext goes over the worker's loop instead (``WebSocketLoopTransport``, ``HTTPConnection``), where the
/// loop calls a class that is not generic, so the socket's code runs specialized; this one's cost is TLS's.
final class SocketByteTransport<Owner: ByteTransportOwner>: GCDAsyncSocketDelegate {
    /// Bytes asked for per read: the socket never holds more than this (plus the parser's bounded buffers).
    static var readSize: UInt { 256 * 1024 }

    @exclusivity(unchecked) private var ownerRef: Unmanaged<Owner>?
    unowned(unsafe) let worker: LoopWorker
    @exclusivity(unchecked) private var socket: GCDAsyncSocket?
    /// The connection asked to close: no more reads are queued.
    @exclusivity(unchecked) private var closing = false

    init(worker: LoopWorker) {
        self.worker = worker
    }

    func attach(_ owner: Unmanaged<Owner>) {
        ownerRef = owner
    }

    /// The connection, without a retain (``attach(_:)`` has run before anything reports).
    @inline(__always)
    private var owner: Owner { ownerRef.unsafelyUnwrapped.takeUnretainedValue() }

    func connect() {
        closing = false
        // The connection settles (or not, when it replaces one) in transportClosed, like any failed connect.
        socket = worker.connectSocket(self, settling: false)
        if socket == nil { worker.loop.executeOnLoop { [self] in owner.transportClosed(nil) } }
    }

    func write(_ bytes: UnsafeRawBufferPointer) {
        socket?.write(Data(bytes), withTimeout: -1, tag: 0)
    }

    /// GCDAsyncSocket queues every write: the connection is never held back (its reads bound what it writes).
    var isBackedUp: Bool { false }

    func close(afterWriting: Bool) {
        closing = true
        if afterWriting { socket?.disconnectAfterWriting() } else { socket?.disconnect() }
    }

    private func read(_ sock: GCDAsyncSocket) {
        // Timeouts are the connection's: the handshake's timer, and the worker's sweep for replies.
        sock.readData(withTimeout: -1, buffer: nil, bufferOffset: 0, maxLength: Self.readSize, tag: 0)
    }

    // MARK: GCDAsyncSocketDelegate

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        guard sock === socket else { return }
        // With TLS the request waits behind the handshake.
        owner.transportConnected()
        if !closing { read(sock) }
    }

    func socketDidSecure(_ sock: GCDAsyncSocket) {
        worker.recordHandshake(sock)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        guard sock === socket else { return }
        data.withUnsafeBytes { owner.transportReceived($0) }
        if !closing { read(sock) }
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        guard sock === socket else { return }
        socket = nil
        // Queued: a disconnect the connection asked for reports here inside its call (the delegate is inline).
        let failure = err.map { ConnectionFailure($0) }
        worker.loop.executeOnLoop { [self] in owner.transportClosed(failure) }
    }
}
