import EpollLoop
import Glibc

/// Disconnecting: at once, or after the queued reads and/or writes.
extension GCDAsyncSocket {
    /// Disconnects now, dropping queued reads and writes (each dropped write is reported through
    /// `didFailToWriteDataWithTag`), then calls `socketDidDisconnect(_:withError:)` with a nil error.
    /// From another thread the socket reports itself disconnected at once and closes on its loop.
    public func disconnect() {
        if eventLoop.inEventLoop {
            closeWithError(nil)
            return
        }
        publish(status: .idle)
        onLoop { [self] in closeWithError(nil) }
    }

    /// Disconnects once every queued read has completed; writes still queued then are dropped. New reads
    /// and writes are refused from now on.
    public func disconnectAfterReading() {
        disconnectAfter(.afterReads)
    }

    /// Disconnects once every queued write has completed; queued reads are dropped at once. New reads and
    /// writes are refused from now on.
    public func disconnectAfterWriting() {
        disconnectAfter(.afterWrites)
    }

    /// Disconnects once every queued read and write has completed. New reads and writes are refused.
    public func disconnectAfterReadingAndWriting() {
        disconnectAfter(.afterReadsAndWrites)
    }

    private func disconnectAfter(_ which: Ending) {
        onLoop { [self] in
            guard lifecycle != .idle else { return }
            ending = ending.adding(which)
            if which == .afterWrites {
                dropReads(with: GCDAsyncSocketError(.closedError, "Reads dropped by disconnectAfterWriting"), keepingStartTLS: true)
            }
            if lifecycle == .open {
                requestPump()
            } else if reads.isEmpty && writes.isEmpty {
                closeWithError(nil)  // Connecting or listening with nothing queued: nothing to wait for.
            }
        }
    }

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
                try? Syscall.close(fd)  // never registered with the loop
            } else {
                try? eventLoop.close(fd: fd)
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
}
