import EpollLoop

/// One descriptor of a ``GCDAsyncUdpSocket`` (a socket has one per IP family it uses, as GCDAsyncUdpSocket
/// has `socket4FD` and `socket6FD`), registered with the socket's loop.
///
/// The loop holds the channel and the channel holds its socket: an open socket stays alive without its user
/// keeping a reference, until it closes (the cycle ends there).
final class DatagramChannel: IOEventHandler {
    let fd: Int32
    /// `AF_INET` or `AF_INET6`.
    let family: Int32
    /// The interest registered with the loop (kept here so an unchanged interest costs no system call).
    var interest: IOEvents = []
    let owner: GCDAsyncUdpSocket

    init(fd: Int32, family: Int32, owner: GCDAsyncUdpSocket) {
        self.fd = fd
        self.family = family
        self.owner = owner
    }

    func handleIO(_ events: IOEvents) {
        owner.handleIO(events, on: self)
    }

    func loopWillShutDown() {
        owner.closeWithError(GCDAsyncUdpSocketError.loopShutDown)
    }
}
