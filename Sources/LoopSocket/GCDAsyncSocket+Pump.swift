import EpollLoop
import Glibc

/// The pump: one iterative pass over reads, writes and pending disconnects, run after every readiness event.
///
/// Delegate callbacks are delivered from inside the pump. A call into the socket made from a callback only
/// queues work and asks the running pump to go round again, so there is no recursion however many reads
/// and writes a delegate chains (GCDAsyncSocket's stack overflows, #102 and #216, cannot happen). A call
/// made on the loop outside a callback defers the pump to the next loop iteration, so a callback is never
/// delivered from inside the caller's own call.
extension GCDAsyncSocket: LoopIOHandler {
    /// Readiness of the connected descriptor (the loop calls it; not public API).
    package func handleIO(_ events: IOEvents) {
        guard phase == .connected else { return }
        readBudget = Int32(clamping: max(1, config.options.maxReadsPerWakeup))
        if events.contains(.error) {
            let code = (try? Syscall.option(fd, level: SOL_SOCKET, name: SO_ERROR)) ?? 0
            if code != 0 {
                closeWithError(GCDAsyncSocketError.closing(SyscallError(.recv, errno: Errno(rawValue: code))))
                return
            }
        }
        if !events.isDisjoint(with: [.readable, .readHangup, .hangup, .error]) {
            flags.insert(.readReady)
            if events.contains(.readable) && !wantsBytes { flags.insert(.readIdleWake) }
        }
        if !events.isDisjoint(with: [.readHangup, .hangup]) { flags.insert(.peerHungUp) }
        if events.contains(.writable) || events.contains(.hangup) { flags.remove(.writeBlocked) }
        pump()
    }

    /// The loop is shutting down: the connection ends with an error saying so.
    package func loopWillShutDown() {
        closeWithError(GCDAsyncSocketError.loopShutDown)
    }

    /// Asks for a pump: the running one goes round again, or one is deferred to the next iteration (or, for
    /// an ``AsyncSocket``'s socket, runs now: its reads and writes then reach the kernel within the call).
    func requestPump() {
        if flags.contains(.pumping) {
            flags.insert(.pumpAgain)
        } else if flags.contains(.pumpsInline) {
            pump()
        } else if !flags.contains(.pumpDeferred) {
            flags.insert(.pumpDeferred)
            context.deferPump(self)
        }
    }

    func runDeferredPump() {
        flags.remove(.pumpDeferred)
        pump()
    }

    func pump() {
        guard !flags.contains(.pumping) else {
            flags.insert(.pumpAgain)
            return
        }
        // Not registered yet (`didAcceptNewSocket` has not run): `startAdopted` pumps.
        if flags.contains(.awaitingStart) { return }
        flags.insert(.pumping)
        repeat {
            flags.remove(.pumpAgain)
            guard phase == .connected else { break }
            if let tls, tls.state != .established {
                // Handshake messages only: queued reads and writes wait behind it.
                advanceHandshake(tls)
                guard phase == .connected else { break }
                if tls.state != .established { continue }
            }
            readLoop()
            guard phase == .connected else { break }
            writeLoop()
            guard phase == .connected else { break }
            disconnectIfDone()
        } while flags.contains(.pumpAgain)
        flags.remove([.pumping, .pumpAgain])
        guard phase == .connected else { return }
        updateInterest()
        updateTimers()
    }

    /// Registers exactly the readiness the socket can act on; the loop makes no syscall when it is unchanged.
    ///
    /// EPOLLIN while a read waits, and lazily in between: it stays armed after the last queued read
    /// completes and is dropped only once it fires with no read queued (until the next read is queued). A
    /// reader that queues its next read outside the completion (an `async` task, a delegate queue) would
    /// otherwise cost an `epoll_ctl` to drop EPOLLIN and another to add it back on every read; the bytes
    /// stay in the kernel, so TCP still pushes back on the peer after that one wake-up.
    /// EPOLLRDHUP until the end of the stream is seen, so a vanished peer is noticed even with no read
    /// queued; EPOLLOUT only after a send hit EAGAIN. No EPOLLIN while reads are paused for backpressure;
    /// EPOLLIN kept when the read budget ran out with bytes left, so the next wakeup reads on.
    func updateInterest() {
        var interest: IOEvents = []
        if !flags.contains(.readEOF) {
            if let tls, tls.state != .established {
                // The handshake reads what it needs whatever reads are queued; while the delegate decides on
                // trust nothing is read at all (the bytes wait in the kernel, and level-triggered EPOLLIN
                // would only spin the loop).
                if tls.state == .handshaking { interest.insert(.readable) }
            } else if flags.isDisjoint(with: [.readTimeoutAsking, .readsPaused]) && (wantsBytes ? pendingCount == 0
                : !flags.contains(.readIdleWake) || (readBudget <= 0 && flags.contains(.readReady))) {
                interest.insert(.readable)
            }
            if !flags.contains(.peerHungUp) { interest.insert(.readHangup) }
        }
        if flags.contains(.writeBlocked) && (!writes.isEmpty || tls?.hasOutput == true) { interest.insert(.writable) }
        if interest.isEmpty && flags.contains(.readEOF) && flags.contains(.writeShutDown) {
            // Both directions are over (the peer's FIN and our shutdown): the kernel now reports EPOLLHUP,
            // which no interest mask can turn off, at every wait until the descriptor closes: a busy loop.
            // One-shot with no interest disarms the descriptor after that report; nothing needs it again.
            interest = .oneShot
        }
        do {
            try eventLoop.setInterest(interest, fd: fd)
        } catch {
            closeWithError(GCDAsyncSocketError(.otherError, "\(error)"))
        }
    }

    /// Closes the socket once the queues a `disconnectAfter…` (or the peer's end of stream) waits for are empty.
    func disconnectIfDone() {
        let afterReads = flags.contains(.disconnectAfterReads)
        let afterWrites = flags.contains(.disconnectAfterWrites) || flags.contains(.closeAfterWritesAtEOF)
        guard afterReads || afterWrites else { return }
        if afterReads && !reads.isEmpty { return }
        if afterWrites && (!writes.isEmpty || tls?.hasOutput == true) { return }
        closeWithError(flags.contains(.closeAfterWritesAtEOF) && !afterReads ? GCDAsyncSocketError.closedByPeer : nil)
    }
}
