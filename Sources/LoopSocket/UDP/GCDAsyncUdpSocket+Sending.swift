import Dispatch
import EpollLoop
import FoundationEssentials

/// Sending: the public calls, which queue a datagram with its tag and timeout; the engine's side (the queue,
/// batches, waits and timeouts) is `DatagramEngine+Send.swift`.
extension GCDAsyncUdpSocket {
    // MARK: Public API

    /// Sends `data` to the connected peer. A negative timeout means none; the timeout counts from now and
    /// fails the send only while it waits for room in the socket buffer.
    ///
    /// Reported by ``GCDAsyncUdpSocketDelegate/udpSocket(_:didSendDataWithTag:)`` or
    /// `udpSocket(_:didNotSendDataWithTag:dueToError:)` (a `badConfigError` if the socket is not connected).
    /// Unlike GCDAsyncUdpSocket, an empty `data` is sent as a zero-length datagram, not ignored.
    public func send(_ data: Data, withTimeout timeout: TimeInterval, tag: Int) {
        enqueue(data, .connected, timeout: timeout, tag: tag)
    }

    /// Sends `data` to `host` and `port`; a host name is resolved off the loop (the send keeps its place in
    /// the queue meanwhile).
    public func send(_ data: Data, toHost host: String, port: UInt16, withTimeout timeout: TimeInterval, tag: Int) {
        if let immediate = Resolver.immediate(host, port: port) {
            enqueue(data, immediate.count == 1 ? .address(immediate[0]) : .candidates(immediate), timeout: timeout, tag: tag)
        } else if host.isEmpty {
            enqueue(data, .invalid(.invalidHost), timeout: timeout, tag: tag)
        } else {
            enqueue(data, .resolving, timeout: timeout, tag: tag, resolve: (host, port))
        }
    }

    /// Sends `data` to a raw `sockaddr` (IPv4 or IPv6).
    public func send(_ data: Data, toAddress remoteAddr: Data, withTimeout timeout: TimeInterval, tag: Int) {
        let destination: Destination
        if let address = SocketAddress(bytes: remoteAddr), address.isIPv4 || address.isIPv6 {
            destination = .address(address)
        } else {
            destination = .invalid(.invalidAddress)
        }
        enqueue(data, destination, timeout: timeout, tag: tag)
    }

    /// GCDAsyncUdpSocket's send filter, called for each datagram before it leaves: on `filterQueue`, or inline
    /// on the loop when `filterQueue` is nil (GCDAsyncUdpSocket ignores a filter without a queue). A datagram
    /// the filter refuses is dropped and reported as sent.
    public func setSendFilter(_ filterBlock: GCDAsyncUdpSocketSendFilterBlock?, withQueue filterQueue: DispatchQueue?) {
        setSendFilter(filterBlock, withQueue: filterQueue, isAsynchronous: true)
    }

    /// As ``setSendFilter(_:withQueue:)``. A filter with a queue is always called asynchronously: a
    /// synchronous call would block the event loop.
    public func setSendFilter(_ filterBlock: GCDAsyncUdpSocketSendFilterBlock?, withQueue filterQueue: DispatchQueue?, isAsynchronous: Bool) {
        let slot = UncheckedSendable(filterBlock.map { FilterSlot(block: $0, queue: filterQueue) })
        onLoop { [self] in installSendFilter(slot.value) }
    }

    // MARK: Queueing

    private func enqueue(_ data: Data, _ destination: Destination, timeout: TimeInterval, tag: Int, resolve: (String, UInt16)? = nil) {
        let deadline = timeout < 0 ? 0 : Deadline.now().uptimeNanoseconds &+ UInt64((timeout * 1e9).rounded(.up)) | 1
        if eventLoop.inEventLoop {
            guard enqueueOnLoop(data, destination, deadline: deadline, tag: tag, resolve: resolve) else { return }
            // Never call back from inside the caller's own call: from a callback, the running pump takes the
            // send; otherwise the next loop iteration does.
            requestPump()
        } else {
            let box = UncheckedSendable(destination)
            let accepted = onLoop { [self] in
                if enqueueOnLoop(data, box.value, deadline: deadline, tag: tag, resolve: resolve) { pump() }
            }
            if !accepted { reportShutDownLoop(tag: tag) }
        }
    }

    private func reportShutDownLoop(tag: Int) {
        // The loop is gone, so is the delegate's usual thread: report on the delegate queue if there is one.
        let (delegate, queue) = faceShared.withLock { ($0.delegate, $0.delegateQueue) }
        guard let delegate else { return }
        let box = UncheckedSendable(delegate)
        let error = GCDAsyncUdpSocketError.loopShutDown
        if let queue {
            queue.async { [self] in box.value.udpSocket(self, didNotSendDataWithTag: tag, dueToError: error) }
        } else {
            box.value.udpSocket(self, didNotSendDataWithTag: tag, dueToError: error)
        }
    }
}
