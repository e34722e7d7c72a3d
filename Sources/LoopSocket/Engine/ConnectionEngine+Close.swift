import CEpollShim
import EpollLoop
import Glibc

/// The one way a connection ends: timers, descriptors, queues and the sink's last callback, in that order.
extension ConnectionEngine {
    /// Ends the connection (or listening, or connecting): cancels timers, closes every descriptor exactly once,
    /// fails the queued writes, drops the queued reads and the prebuffer, and calls
    /// `socketDidDisconnect(_:withError:)` last. The socket may connect or accept again afterwards.
    func closeWithError(_ error: ConnectionError?) {
        let writeShutDown = writeSide == .shutDown
        guard case .tearDown(let wasOpen, let wasStarting, let readSideOpen, let tls) = connectionState.handle(.closed)
        else { return }
        if wasOpen { eventLoop.countSocket(CEPOLL_STREAM_CLOSED) }
        eventLoop.cancelOnLoop(readTimer)
        eventLoop.cancelOnLoop(writeTimer)
        readTimer = .invalid
        writeTimer = .invalid
        readTimerOp = .max
        writeTimerOp = .max
        if let layer = tlsLayer { endTLS(layer, phase: tls, writeShutDown: writeShutDown, error: error) }
        if fd >= 0 {
            if error == nil && readSideOpen && !wasStarting { discardUnreadInput() }
            unpublish(fd)
            if wasStarting {
                LibraryFault.close(fd)  // never registered with the loop
            } else {
                LibraryFault.close(fd, on: eventLoop, soleReference: traits.contains(.soleReference))
            }
            fd = -1
        }
        if dial != nil { closeDialState() }  // an accepted connection never listened or connected
        var failedWrites = writes.removeAll()
        // startTLS's marker was never a write of the user's. (Asked only of a nonempty array: `removeAll(where:)`
        // rebuilds even an empty one, about 160 instructions of every close.)
        if !failedWrites.isEmpty { failedWrites.removeAll { $0.isStartTLS } }
        dropReads(with: error ?? ConnectionError(.readDroppedByClose))
        pending = []
        pendingStart = 0
        queuedWriteBytes = 0
        // Everything of the connection goes; how pumps are scheduled and where callbacks go stay.
        pumpState.remove(.again)
        readiness = []
        asking = []
        traits = []
        publish(connectionState, onlyFor: config.generation)
        if !failedWrites.isEmpty {
            sinkReport(.writesDropped(error))
            let writeError = error ?? ConnectionError(.writeDroppedByClose)
            for op in failedWrites {
                sinkReport(.writeFailed(tag: op.tag, error: writeError))
            }
        }
        sinkReport(.disconnected(error))
    }

    /// Reads and drops what the peer sent that nobody read, before a close the application asked for.
    ///
    /// Linux answers the close of a socket with unread input with a reset instead of a FIN, and a reset
    /// makes the peer's kernel discard what it has received but its application not yet read: the end of
    /// our last writes, reported written. A TLS 1.3 client that never reads after the handshake always has
    /// such input (the server's session tickets). Bounded: a peer that keeps sending gets its reset. Into a
    /// buffer of its own, not the loop's receive buffer: a close from a read callback runs while that buffer
    /// still holds the rest of the chunk being delivered (TLS records OpenSSL has not taken yet, a session
    /// ticket among them), and overwriting it cost a TLS client its next resumption.
    private func discardUnreadInput() {
        withUnsafeTemporaryAllocation(byteCount: 16384, alignment: 16) { buffer in
            for _ in 0..<16 {
                guard case .processed(let count)? = try? Syscall.recv(fd, buffer), count > 0 else { return }
                eventLoop.countSocket(CEPOLL_STREAM_BYTES_IN, count)
            }
        }
    }

    /// Closes the listening descriptors and cancels a connect in progress and its timer (part of
    /// ``closeWithError(_:)``; the timer lives in the dial state, so a socket without one has none to cancel).
    private func closeDialState() {
        eventLoop.cancelOnLoop(connectTimer)
        connectTimer = .invalid
        for listener in listeners { listener.close(on: eventLoop) }
        if !listeners.isEmpty { withSharedState { $0.openListeners = ([], nil) } }
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
        switch connectionState.handle(.finishAsked(which)) {
        case .pump:
            requestPump()
        case .dropReadsAndPump:
            dropReadsForFinishWriting()
            requestPump()
        case .closeIfNothingQueued(let dropReads):
            if dropReads { dropReadsForFinishWriting() }
            if reads.isEmpty && writes.isEmpty { closeWithError(nil) }
        default:
            break
        }
    }

    /// `disconnectAfterWriting` takes no more reads: the queued ones go (startTLS's marker stays).
    private func dropReadsForFinishWriting() {
        dropReads(with: ConnectionError(.readDroppedByFinishWriting), keepingStartTLS: true)
    }
}

extension ConnectionEngine {
    /// The descriptor was handed to the caller (``GCDAsyncSocket/socketFD()`` and its siblings), who may `dup`
    /// it: its close must then deregister it first, since a duplicate would keep the epoll registration. Loop only.
    func descriptorHandedOut() {
        traits.remove(.soleReference)
    }
}
