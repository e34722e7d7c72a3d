import EpollLoop
import FoundationEssentials

/// The delegate behind an ``AsyncSocket`` or ``AsyncListener``: turns lifecycle callbacks into resumed
/// continuations. Reads do not come through here (their continuations ride on the read operations).
/// Every stored property is confined to the socket's loop, where the callbacks run (no delegate queue).
final class AsyncSocketHandler: GCDAsyncSocketDelegate, @unchecked Sendable {
    var connectContinuation: UnsafeContinuation<Void, any Error>?
    var closeWaiters: [UnsafeContinuation<Void, Never>] = []
    var writableWaiters: [(id: UInt64, continuation: UnsafeContinuation<Void, any Error>)] = []
    var nextWaiterID: UInt64 = 0
    /// The first failure seen (a failed write, the disconnect); later operations throw it.
    var failure: (any Error)?
    var disconnected = false
    /// For listeners: where accepted connections go.
    var accepted: AsyncThrowingStream<AsyncSocket, any Error>.Continuation?
    /// False from when the write queue passes its high water mark until it falls below the low one.
    var isWritable = true

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        resumeConnect(nil)
    }

    func socket(_ sock: GCDAsyncSocket, didConnectTo url: URL) {
        resumeConnect(nil)
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        let handler = AsyncSocketHandler()
        newSocket.setDelegate(handler, delegateQueue: nil)
        accepted?.yield(AsyncSocket(socket: newSocket, handler: handler))
    }

    func socket(_ sock: GCDAsyncSocket, didChangeWritability isWritable: Bool) {
        self.isWritable = isWritable
        guard isWritable else { return }
        let waiters = writableWaiters
        writableWaiters = []
        for waiter in waiters { waiter.continuation.resume() }
    }

    func socket(_ sock: GCDAsyncSocket, didFailToWriteDataWithTag tag: Int, error: any Error) {
        if failure == nil { failure = error }
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: (any Error)?) {
        disconnected = true
        let error = err ?? GCDAsyncSocketError(.closedError, "The socket is closed")
        if failure == nil { failure = error }
        resumeConnect(error)
        let waiters = writableWaiters
        writableWaiters = []
        for waiter in waiters { waiter.continuation.resume(throwing: error) }
        let closing = closeWaiters
        closeWaiters = []
        for waiter in closing { waiter.resume() }
        if let accepted {
            self.accepted = nil
            if err == nil { accepted.finish() } else { accepted.finish(throwing: error) }
        }
    }

    func resumeConnect(_ error: (any Error)?) {
        guard let continuation = connectContinuation else { return }
        connectContinuation = nil
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
    }

    /// Stops waiting for writability (cancellation): the waiter throws `CancellationError`.
    func cancelWritableWaiter(_ id: UInt64) {
        guard let i = writableWaiters.firstIndex(where: { $0.id == id }) else { return }
        writableWaiters.remove(at: i).continuation.resume(throwing: CancellationError())
    }
}
