import EpollLoop
import FoundationEssentials

/// The delegate behind an ``AsyncSocket`` or ``AsyncListener``: turns lifecycle callbacks into resumed
/// continuations. Reads do not come through here (their continuations ride on the read operations).
/// Every stored property is confined to the socket's loop, where the callbacks run (no delegate queue).
final class AsyncSocketHandler: GCDAsyncSocketDelegate, @unchecked Sendable {
    var connectContinuation: UnsafeContinuation<Void, any Error>?
    var closeWaiters: [UnsafeContinuation<Void, Never>] = []
    /// Callers of `closeAfterWriting`, and the timer that bounds their wait.
    var drainWaiters: [UnsafeContinuation<Void, any Error>] = []
    var drainTimer: TimerID = .invalid
    /// Why queued bytes were not written, if the close dropped some: what `closeAfterWriting` throws.
    var droppedWrites: (any Error)?
    var writableWaiters: [(id: UInt64, continuation: UnsafeContinuation<Void, any Error>)] = []
    var nextWaiterID: UInt64 = 0
    /// The first failure seen (a failed write, the disconnect); later operations throw it.
    var failure: (any Error)?
    var disconnected = false
    /// For listeners: where accepted connections go.
    var accepted: AsyncThrowingStream<AsyncSocket, any Error>.Continuation?
    /// False from when the write queue passes its high water mark until it falls below the low one.
    var isWritable = true
    /// The `executeThenClose` running on the loop, whose task's reads use its cancellation registration.
    var readScope: ReadScope?

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
        sock.eventLoop.cancelOnLoop(drainTimer)
        drainTimer = .invalid
        if sock.closeDroppedWrites {
            droppedWrites = err ?? GCDAsyncSocketError(.closedError, "The socket was closed before the queued writes were written")
        }
        let draining = drainWaiters
        drainWaiters = []
        for waiter in draining { resumeDrainWaiter(waiter) }
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

    /// `AsyncSocket.closeAfterWriting`, on the loop: `disconnectAfterWriting`, its waiter resumed by the
    /// disconnect, and a timer that closes the connection (failing what is queued) if `timeout` passes first.
    func closeAfterWriting(_ socket: GCDAsyncSocket, timeout: Duration?, _ waiter: UnsafeContinuation<Void, any Error>) {
        guard !disconnected else { return resumeDrainWaiter(waiter) }
        drainWaiters.append(waiter)
        if let timeout, drainTimer == .invalid {
            let deadline = (Deadline.now() + timeout).uptimeNanoseconds
            drainTimer = socket.eventLoop.scheduleOnLoop(at: deadline) {
                socket.closeWithError(GCDAsyncSocketError(.writeTimeoutError, "The queued writes were not written within the close timeout"))
            }
        }
        socket.disconnectAfterWriting()
    }

    private func resumeDrainWaiter(_ waiter: UnsafeContinuation<Void, any Error>) {
        if let droppedWrites { waiter.resume(throwing: droppedWrites) } else { waiter.resume() }
    }

    /// Stops waiting for writability (cancellation): the waiter throws `CancellationError`.
    func cancelWritableWaiter(_ id: UInt64) {
        guard let i = writableWaiters.firstIndex(where: { $0.id == id }) else { return }
        writableWaiters.remove(at: i).continuation.resume(throwing: CancellationError())
    }
}
