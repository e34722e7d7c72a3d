import FoundationEssentials

/// The callbacks of a ``GCDAsyncUdpSocket``: every method of GCDAsyncUdpSocket's delegate protocol, all
/// optional (each has a default that does nothing), plus one this library adds
/// (``udpSocket(_:didNotReceiveDataDueToError:)``).
///
/// Callbacks run on the socket's event loop when the socket has no `delegateQueue` (the fast path), or on
/// the `delegateQueue` when it has one (GCDAsyncUdpSocket's model). Addresses are raw `sockaddr` bytes, as
/// GCDAsyncUdpSocket's `NSData` addresses are; read them with ``GCDAsyncUdpSocket/host(fromAddress:)``.
///
/// ```swift
/// final class Echo: GCDAsyncUdpSocketDelegate {
///     func udpSocket(_ sock: GCDAsyncUdpSocket, didReceive data: Data, fromAddress address: Data,
///                    withFilterContext filterContext: Any?) {
///         sock.send(data, toAddress: address, withTimeout: -1, tag: 0)
///     }
/// }
/// ```
public protocol GCDAsyncUdpSocketDelegate: AnyObject {
    /// `connect(toHost:onPort:)` or `connect(toAddress:)` succeeded; `address` is the peer's `sockaddr`.
    func udpSocket(_ sock: GCDAsyncUdpSocket, didConnectToAddress address: Data)
    /// A connect failed (the host did not resolve, no address of an enabled family, `connect(2)` failed).
    func udpSocket(_ sock: GCDAsyncUdpSocket, didNotConnect error: Error?)
    /// The datagram queued with `tag` was handed to the kernel (or dropped by the send filter).
    func udpSocket(_ sock: GCDAsyncUdpSocket, didSendDataWithTag tag: Int)
    /// The datagram queued with `tag` was not sent: a timeout, a full send queue, an unresolvable host, an
    /// error from the kernel (`ECONNREFUSED` after an ICMP port unreachable, `EMSGSIZE`, `EACCES` for a
    /// broadcast without ``GCDAsyncUdpSocket/enableBroadcast(_:)``), or the socket closing.
    func udpSocket(_ sock: GCDAsyncUdpSocket, didNotSendDataWithTag tag: Int, dueToError error: Error?)
    /// A datagram arrived from `address` (and passed the receive filter, whose context is passed on).
    func udpSocket(_ sock: GCDAsyncUdpSocket, didReceive data: Data, fromAddress address: Data, withFilterContext filterContext: Any?)
    /// The socket closed: `error` is nil after ``GCDAsyncUdpSocket/close()`` or
    /// ``GCDAsyncUdpSocket/closeAfterSending()``. Always the socket's last callback.
    func udpSocketDidClose(_ sock: GCDAsyncUdpSocket, withError error: Error?)
    /// Not in GCDAsyncUdpSocket: a datagram was lost on the way in, and the socket keeps receiving. Reported
    /// for a datagram longer than the maximum receive size (`MSG_TRUNC`: it is dropped, not delivered cut),
    /// and for an ICMP error the kernel queued on the socket (`ECONNREFUSED` on a connected socket whose
    /// peer has no listener). GCDAsyncUdpSocket delivered the first cut and closed the socket on the second.
    func udpSocket(_ sock: GCDAsyncUdpSocket, didNotReceiveDataDueToError error: Error)
}

extension GCDAsyncUdpSocketDelegate {
    /// Does nothing.
    public func udpSocket(_ sock: GCDAsyncUdpSocket, didConnectToAddress address: Data) {}
    /// Does nothing.
    public func udpSocket(_ sock: GCDAsyncUdpSocket, didNotConnect error: Error?) {}
    /// Does nothing.
    public func udpSocket(_ sock: GCDAsyncUdpSocket, didSendDataWithTag tag: Int) {
        sock.noteDefaultDidSendRan(by: self)
    }
    /// Does nothing.
    public func udpSocket(_ sock: GCDAsyncUdpSocket, didNotSendDataWithTag tag: Int, dueToError error: Error?) {}
    /// Does nothing.
    public func udpSocket(_ sock: GCDAsyncUdpSocket, didReceive data: Data, fromAddress address: Data, withFilterContext filterContext: Any?) {}
    /// Does nothing.
    public func udpSocketDidClose(_ sock: GCDAsyncUdpSocket, withError error: Error?) {}
    /// Does nothing.
    public func udpSocket(_ sock: GCDAsyncUdpSocket, didNotReceiveDataDueToError error: Error) {}
}
