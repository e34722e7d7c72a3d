import EpollLoop
import FoundationEssentials

/// Closing: every queued send is reported, each descriptor is closed once, the close is reported last.
extension DatagramEngine {
    /// Closes once every queued send has been sent or has failed (``DatagramState/Ending/afterSends``). Loop only.
    func closeAfterSends() {
        if case .close = state.handle(.closeAfterSendsAsked(sendsQueued: !sends.isEmpty, pumping: pumpState.contains(.pumping))) {
            closeWithError(nil)
        }
    }

    /// Closes with `error` (nil for a requested close). Loop only.
    func closeWithError(_ error: DatagramError?) {
        // Not connected any more before the descriptors go, so the getters never see a connected socket
        // without one.
        guard case .tearDown = state.handle(.closed) else { return }
        let hadDescriptors = hasChannels
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
        pumpState.remove(.again)  // a pump on the stack stops at the generation; a deferred one finds nothing
        peerAddress = nil
        closeChannels()
        reportFailedAtOnce()  // before the close, which is the last event
        for tag in tags { sinkReport(.didNotSend(tag: tag, .closed)) }
        if hadDescriptors { sinkReport(.closed(error)) }
    }
}
