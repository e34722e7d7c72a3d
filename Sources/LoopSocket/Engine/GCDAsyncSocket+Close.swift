import EpollLoop
import Glibc

/// The one way a connection ends: timers, descriptors, queues and the sink's last callback, in that order.
extension GCDAsyncSocket {
    /// Ends the connection (or listening, or connecting): cancels timers, closes every descriptor exactly once,
    /// fails the queued writes, drops the queued reads and the prebuffer, and calls
    /// `socketDidDisconnect(_:withError:)` last. The socket may connect or accept again afterwards.
    func closeWithError(_ error: (any Error)?) {
        guard lifecycle != .idle else { return }
        let wasStarting = lifecycle == .starting
        lifecycle = .idle
        stateIndex &+= 1
        eventLoop.cancelOnLoop(readTimer)
        eventLoop.cancelOnLoop(writeTimer)
        eventLoop.cancelOnLoop(connectTimer)
        readTimer = .invalid
        writeTimer = .invalid
        connectTimer = .invalid
        readTimerOp = .max
        writeTimerOp = .max
        if case .tls(let tls) = transport { endTLS(tls, error: error) }
        if fd >= 0 {
            unpublish(fd)
            if wasStarting {
                LibraryFault.close(fd)  // never registered with the loop
            } else {
                LibraryFault.close(fd, on: eventLoop)
            }
            fd = -1
        }
        if dial != nil { closeDialState() }  // an accepted connection never listened or connected
        let failedWrites = writes.removeAll()
        dropReads(with: error ?? GCDAsyncSocketError.disconnected)
        pending = []
        pendingStart = 0
        queuedWriteBytes = 0
        // Everything of the connection goes; how pumps are scheduled and where callbacks go stay.
        pumpState.remove(.again)
        transport = .plain
        readSide = .open
        writeSide = .open
        ending = .none
        writability = .writable
        continuous = .off
        readiness = []
        asking = []
        traits = []
        publish(status: .idle, onlyFor: config.claim)
        if !failedWrites.isEmpty, case .async(let handler) = sink { handler.closeDroppedWrites(error) }
        if !failedWrites.isEmpty {
            let writeError = error ?? GCDAsyncSocketError.disconnectedBeforeWrite
            for op in failedWrites {
                notify { $0.socket($1, didFailToWriteDataWithTag: op.tag, error: writeError) }
            }
        }
        notifyDidDisconnect(error)
    }

    /// Closes the listening descriptors and cancels a connect in progress (part of ``closeWithError(_:)``).
    private func closeDialState() {
        for listener in listeners { listener.close(on: eventLoop) }
        if !listeners.isEmpty { shared.withLock { $0.openListeners = ([], nil) } }
        listeners = []
        if let path = unixListenPath {
            unlink(path)
            unixListenPath = nil
        }
        connecting?.cancel(on: eventLoop)
        connecting = nil
    }

    /// A `disconnectAfter…` on the loop: no new reads or writes from now on, and the close once the queues
    /// it names have drained (at once when connecting or listening with nothing queued).
    func end(after which: Ending) {
        guard lifecycle != .idle else { return }
        ending = ending.adding(which)
        if which == .afterWrites {
            dropReads(with: GCDAsyncSocketError(.closedError, "Reads dropped by disconnectAfterWriting"), keepingStartTLS: true)
        }
        if lifecycle == .open {
            requestPump()
        } else if reads.isEmpty && writes.isEmpty {
            closeWithError(nil)
        }
    }
}
