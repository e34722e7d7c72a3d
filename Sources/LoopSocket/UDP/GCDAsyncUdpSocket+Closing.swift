import EpollLoop
import FoundationEssentials

/// Closing: every queued send is reported, each descriptor is closed once, `udpSocketDidClose` comes last.
extension GCDAsyncUdpSocket {
    /// Closes the socket now. Queued sends are reported with `closedError` (GCDAsyncUdpSocket dropped them
    /// silently); `udpSocketDidClose(_:withError:)` follows with a nil error if the socket had a descriptor.
    /// The socket may be bound again afterwards.
    public func close() {
        _ = syncOnLoop { closeWithError(nil) }
    }

    /// Closes the socket once every queued send has been sent or has failed.
    public func closeAfterSending() {
        onLoop { [self] in
            flags.insert(.closeAfterSends)
            if sends.isEmpty && !flags.contains(.sendPumping) { closeWithError(nil) }
        }
    }

    /// Closes with `error` (nil for a requested close). Loop only.
    func closeWithError(_ error: GCDAsyncUdpSocketError?) {
        let hadDescriptors = flags.contains(.didCreateSockets)
        generation &+= 1
        for timer in [sendTimer, retryTimer] where timer != .invalid { eventLoop.cancelOnLoop(timer) }
        sendTimer = .invalid
        retryTimer = .invalid
        var tags: [Int] = []
        while !sends.isEmpty { tags.append(sends.removeFirst().tag) }
        queuedSendBytes = 0
        resolutions.removeAll()
        held.removeAll()
        pendingFilterOperations = 0
        closeChannels()
        peerAddress = nil
        flags = []
        for tag in tags { notifyDidNotSend(tag: tag, error: GCDAsyncUdpSocketError.closed) }
        if hadDescriptors { notify { $0.udpSocketDidClose($1, withError: error) } }
    }
}
