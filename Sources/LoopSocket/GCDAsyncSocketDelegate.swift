import Dispatch
import FoundationEssentials

/// The callbacks of a ``GCDAsyncSocket``: every method of GCDAsyncSocket's delegate protocol, all optional
/// (each has a default that does nothing), plus a few this library adds.
///
/// Callbacks run on the socket's event loop when the socket has no `delegateQueue` (the fast path), or on the
/// `delegateQueue` when it has one (GCDAsyncSocket's model). `socketDidDisconnect(_:withError:)` is always
/// the last callback of a connection.
///
/// ```swift
/// final class Echo: GCDAsyncSocketDelegate {
///     func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
///         newSocket.readData(withTimeout: -1, tag: 0)
///     }
///     func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
///         sock.write(data, withTimeout: -1, tag: 0)
///         sock.readData(withTimeout: -1, tag: 0)
///     }
/// }
/// ```
public protocol GCDAsyncSocketDelegate: AnyObject {
    /// Called before an accepted socket is created; return a queue for its delegate callbacks, or `nil` to
    /// inherit the listener's `delegateQueue`. As in GCDAsyncSocket, only a delegate that implements it is
    /// asked: once a listener sees a delegate type take the default, it stops asking that type.
    func newSocketQueueForConnection(fromAddress address: Data, on sock: GCDAsyncSocket) -> DispatchQueue?
    /// A listening socket accepted a connection. Unlike GCDAsyncSocket, the new socket stays alive without
    /// being retained: its event loop holds it until it disconnects.
    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket)
    /// The socket connected to `host` (always a numeric IP) and `port`.
    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16)
    /// The socket connected to a Unix-domain socket.
    func socket(_ sock: GCDAsyncSocket, didConnectTo url: URL)
    /// A read operation completed.
    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int)
    /// A to-length or to-separator read made progress by `partialLength` bytes.
    func socket(_ sock: GCDAsyncSocket, didReadPartialDataOfLength partialLength: UInt, tag: Int)
    /// A write operation completed: all its bytes were handed to the kernel.
    func socket(_ sock: GCDAsyncSocket, didWriteDataWithTag tag: Int)
    /// A write operation made progress by `partialLength` bytes without completing.
    func socket(_ sock: GCDAsyncSocket, didWritePartialDataOfLength partialLength: UInt, tag: Int)
    /// A read timed out; return a positive interval to extend it, or 0 to let it time out.
    func socket(_ sock: GCDAsyncSocket, shouldTimeoutReadWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval
    /// A write timed out; return a positive interval to extend it, or 0 to let it time out.
    func socket(_ sock: GCDAsyncSocket, shouldTimeoutWriteWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval
    /// The peer closed its write side; called only when `autoDisconnectOnClosedReadStream` is false.
    func socketDidCloseReadStream(_ sock: GCDAsyncSocket)
    /// The socket disconnected: `err` is `nil` for a disconnect you asked for. Always the last callback.
    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?)
    /// The TLS handshake started by `startTLS` completed: reads and writes now go over TLS.
    func socketDidSecure(_ sock: GCDAsyncSocket)
    /// Manual trust evaluation (`GCDAsyncSocketManuallyEvaluateTrust`): decide whether to trust the peer's
    /// chain and call `completionHandler` once, from any thread. The handshake (on a server, any data) waits
    /// for the answer, within the handshake timeout. Linux has no Security framework: ``SecTrust`` is
    /// ``TLSTrust``, which carries the chain, and ``TLSTrust/evaluate()`` makes the checks automatic
    /// verification would. The default asks the `async` form, ``socket(_:didReceive:)``, whose default rejects.
    func socket(_ sock: GCDAsyncSocket, didReceive trust: SecTrust, completionHandler: @escaping @Sendable (Bool) -> Void)
    /// Manual trust evaluation in the `async` form Swift imports on Apple platforms: return whether to trust
    /// the peer's chain. Asked (in a task) when the delegate implements this and not the completion-handler
    /// form, whose default asks it; the handshake waits for the answer, within the handshake timeout. The
    /// default rejects.
    func socket(_ sock: GCDAsyncSocket, didReceive trust: SecTrust) async -> Bool

    // Additions of this library.

    /// The bytes queued for writing crossed the high water mark (`false`) or fell below the low one (`true`).
    func socket(_ sock: GCDAsyncSocket, didChangeWritability isWritable: Bool)
    /// A queued write will never complete: the socket disconnected first, the write timed out (with
    /// `timeoutsFailOnlyTheOperation`), or the write queue's hard cap was reached. Every write ends in
    /// either `didWriteDataWithTag` or this.
    func socket(_ sock: GCDAsyncSocket, didFailToWriteDataWithTag tag: Int, error: Error)
    /// A read failed without closing the socket (a timeout with `timeoutsFailOnlyTheOperation`).
    func socket(_ sock: GCDAsyncSocket, didFailToReadDataWithTag tag: Int, error: Error)
    /// A listening socket could not accept (for example `EMFILE`: the pending connection was shed, and
    /// accepting pauses briefly). The listener keeps listening.
    func socket(_ sock: GCDAsyncSocket, didFailToAcceptWithError error: Error)
}

extension GCDAsyncSocketDelegate {
    /// Returns `nil`: the new socket inherits the listener's delegate queue. (It also tells the listener
    /// that the delegate's type does not implement this method, so the listener stops asking it.)
    public func newSocketQueueForConnection(fromAddress address: Data, on sock: GCDAsyncSocket) -> DispatchQueue? {
        sock.noteDefaultQueueChooserRan()
        return nil
    }
    /// Does nothing.
    public func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {}
    /// Does nothing.
    public func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {}
    /// Does nothing.
    public func socket(_ sock: GCDAsyncSocket, didConnectTo url: URL) {}
    /// Does nothing.
    public func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {}
    /// Does nothing.
    public func socket(_ sock: GCDAsyncSocket, didReadPartialDataOfLength partialLength: UInt, tag: Int) {}
    /// Does nothing.
    public func socket(_ sock: GCDAsyncSocket, didWriteDataWithTag tag: Int) {
        sock.noteDefaultDidWriteRan(by: self)
    }
    /// Does nothing.
    public func socket(_ sock: GCDAsyncSocket, didWritePartialDataOfLength partialLength: UInt, tag: Int) {}
    /// Returns 0: the operation times out.
    public func socket(_ sock: GCDAsyncSocket, shouldTimeoutReadWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval { 0 }
    /// Returns 0: the operation times out.
    public func socket(_ sock: GCDAsyncSocket, shouldTimeoutWriteWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval { 0 }
    /// Does nothing.
    public func socketDidCloseReadStream(_ sock: GCDAsyncSocket) {}
    /// Does nothing.
    public func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {}
    /// Does nothing.
    public func socketDidSecure(_ sock: GCDAsyncSocket) {}
    /// Asks the `async` form, ``socket(_:didReceive:)`` (in a task), and passes its answer on: a delegate that
    /// implements only that form is asked, as on Apple platforms, where both forms are the same method.
    public func socket(_ sock: GCDAsyncSocket, didReceive trust: SecTrust, completionHandler: @escaping @Sendable (Bool) -> Void) {
        // The delegate is used from the task as GCDAsyncSocket's imported `async` form is (Apple's thunk runs it
        // in a task too); the box carries it there without requiring delegates to be `Sendable`.
        let delegate = UncheckedSendable<any GCDAsyncSocketDelegate>(self)
        Task { completionHandler(await delegate.value.socket(sock, didReceive: trust)) }
    }
    /// Rejects: a delegate that asked for manual trust evaluation must decide.
    public func socket(_ sock: GCDAsyncSocket, didReceive trust: SecTrust) async -> Bool { false }
    /// Does nothing.
    public func socket(_ sock: GCDAsyncSocket, didChangeWritability isWritable: Bool) {}
    /// Does nothing.
    public func socket(_ sock: GCDAsyncSocket, didFailToWriteDataWithTag tag: Int, error: Error) {}
    /// Does nothing.
    public func socket(_ sock: GCDAsyncSocket, didFailToReadDataWithTag tag: Int, error: Error) {}
    /// Does nothing.
    public func socket(_ sock: GCDAsyncSocket, didFailToAcceptWithError error: Error) {}
}
