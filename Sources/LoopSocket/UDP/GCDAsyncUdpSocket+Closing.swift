import EpollLoop
import FoundationEssentials

/// Closing: every queued send is reported, each descriptor is closed once, `udpSocketDidClose` comes last.
extension GCDAsyncUdpSocket {
    /// Closes the socket now. Queued sends are reported with `closedError` (GCDAsyncUdpSocket dropped them
    /// silently); `udpSocketDidClose(_:withError:)` follows with a nil error if the socket had a descriptor.
    /// The socket may be bound again afterwards.
    ///
    /// It returns once the socket is closed (GCDAsyncUdpSocket's `dispatch_sync`), from any thread, another
    /// event loop's included, except when that wait could deadlock: called on loop A's thread while this
    /// socket's loop waits, itself or through other loops, for A, it starts the close on the socket's loop
    /// and returns at once, before the socket is closed (``isClosed()`` may still say false;
    /// `udpSocketDidClose` tells when it is).
    public func close() {
        switch waitForLoop({ closeWithError(nil) }) {
        case .ran, .loopShutDown: break
        case .wouldDeadlock: onLoop { [self] in closeWithError(nil) }
        }
    }

    /// Closes the socket once every queued send has been sent or has failed.
    public func closeAfterSending() {
        onLoop { [self] in
            flags.insert(.closeAfterSends)
            if sends.isEmpty && !pumpState.contains(.pumping) { closeWithError(nil) }
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
        // Not connected any more before the descriptors go, so the getters never see a connected socket
        // without one.
        flags = []
        pumpState.remove(.again)  // a pump on the stack stops at the generation; a deferred one finds nothing
        peerAddress = nil
        closeChannels()
        for tag in tags { notifyDidNotSend(tag: tag, error: GCDAsyncUdpSocketError.closed) }
        if hadDescriptors { notify { $0.udpSocketDidClose($1, withError: error) } }
    }
}
