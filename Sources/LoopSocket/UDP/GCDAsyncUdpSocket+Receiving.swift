import Dispatch
import EpollLoop
import FoundationEssentials

/// Receiving: once, continuously, paused; the receive filter. The engine's side is `DatagramEngine+Receive.swift`.
extension GCDAsyncUdpSocket {
    // MARK: Public API

    /// Receives one datagram (the next that passes the receive filter), then stops.
    ///
    /// - Throws: `badConfigError` if the socket has no descriptor yet: bind it, connect it or send first;
    ///   `badConfigError`, doing nothing, if waiting for the socket's loop would deadlock (see ``GCDAsyncUdpSocket``).
    public func receiveOnce() throws {
        try throwingOnLoop("receiveOnce()") { () throws(DatagramError) in try startReceiving(.once) }
    }

    /// Receives every datagram until ``pauseReceiving()`` or close.
    ///
    /// - Throws: `badConfigError` if the socket has no descriptor yet: bind it, connect it or send first;
    ///   `badConfigError`, doing nothing, if waiting for the socket's loop would deadlock (see ``GCDAsyncUdpSocket``).
    public func beginReceiving() throws {
        try throwingOnLoop("beginReceiving()") { () throws(DatagramError) in try startReceiving(.continuous) }
    }

    /// Stops receiving. Datagrams wait in the kernel's buffer (which drops what does not fit) until
    /// ``receiveOnce()`` or ``beginReceiving()``; none already taken from it is lost.
    public func pauseReceiving() {
        onLoop { [self] in stopReceiving() }
    }

    /// GCDAsyncUdpSocket's receive filter, called for each datagram before it is delivered: on `filterQueue`,
    /// or inline on the loop when `filterQueue` is nil (GCDAsyncUdpSocket ignores a filter without a queue).
    public func setReceiveFilter(_ filterBlock: GCDAsyncUdpSocketReceiveFilterBlock?, withQueue filterQueue: DispatchQueue?) {
        setReceiveFilter(filterBlock, withQueue: filterQueue, isAsynchronous: true)
    }

    /// As ``setReceiveFilter(_:withQueue:)``. A filter with a queue is always called asynchronously: a
    /// synchronous call would block the event loop.
    public func setReceiveFilter(_ filterBlock: GCDAsyncUdpSocketReceiveFilterBlock?, withQueue filterQueue: DispatchQueue?, isAsynchronous: Bool) {
        let slot = UncheckedSendable(filterBlock.map { FilterSlot(block: $0, queue: filterQueue) })
        onLoop { [self] in installReceiveFilter(slot.value) }
    }
}
