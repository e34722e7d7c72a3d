import EpollLoop
import Glibc

/// The pump: one iterative pass over reads, writes and pending disconnects, run after every readiness event.
///
/// Delegate callbacks are delivered from inside the pump. A call into the socket made from a callback only
/// queues work and asks the running pump to go round again, so there is no recursion however many reads
/// and writes a delegate chains (the stack overflows GCDAsyncSocket users reported for long read chains cannot happen). A call
/// made on the loop outside a callback defers the pump to the next loop iteration, so a callback is never
/// delivered from inside the caller's own call.
extension ConnectionEngine: LoopIOHandler, PumpScheduled, DescriptorOwner {
    /// Readiness of the connected descriptor (the loop calls it; not public API).
    package func handleIO(_ events: IOEvents) {
        guard isOpen else { return }
        readBudget = Int16(clamping: max(1, config.options.maxReadsPerWakeup))
        if events.contains(.error) {
            let code = (try? Syscall.option(fd, level: SOL_SOCKET, name: SO_ERROR)) ?? 0
            if code != 0 {
                closeWithError(ConnectionError(SyscallError(.recv, errno: Errno(rawValue: code))))
                return
            }
        }
        if !events.isDisjoint(with: [.readable, .readHangup, .hangup, .error]) {
            readiness.insert(.readable)
            if events.contains(.readable) && !wantsBytes { readiness.insert(.idleWake) }
        }
        if !events.isDisjoint(with: [.readHangup, .hangup]) { readiness.insert(.peerHungUp) }
        if events.contains(.writable) || events.contains(.hangup) { readiness.remove(.writeBlocked) }
        pump()
    }

    /// ``handleIO(_:)`` as the loop calls it, written out here rather than taken from the protocol's default,
    /// which a conformance in another module reaches only unspecialized (a generic call and a witness lookup
    /// per event).
    package static func handleIO(unretained object: UnsafeMutableRawPointer, _ events: IOEvents) {
        Unmanaged<ConnectionEngine>.fromOpaque(object)._withUnsafeGuaranteedRef { $0.handleIO(events) }
    }

    /// The loop is shutting down: the connection ends with an error saying so.
    package func loopWillShutDown() {
        closeWithError(ConnectionError(.loopShutDown))
    }

    /// Whether no TLS is running or queued (`startTLS` has one transition per connection). Loop only.
    var isPlaintext: Bool { tlsPhase == .plain }

    /// Asks for a pump (``PumpState/request()``): the running one goes round again, or one is deferred to
    /// the next iteration (or, for an ``AsyncSocket``'s socket, runs now: its reads and writes then reach the
    /// kernel within the call).
    func requestPump() {
        let action = pumpState.request()
        if action == .pumpNow { pump() } else if action == .deferPump { context.deferPump(self) }
    }

    func pump() {
        guard pumpState.begin() else { return }
        repeat {
            // Not open: closed by a callback, or `starting` (`registerAdopted` pumps once it is registered).
            guard isOpen else { break }
            if let tls = tlsLayer, tlsPhase != .established {
                // Handshake messages only: queued reads and writes wait behind it.
                advanceHandshake(tls)
                guard isOpen else { break }
                if tlsPhase != .established { continue }
            }
            readLoop()
            guard isOpen else { break }
            writeLoop()
            guard isOpen else { break }
            disconnectIfDone()
        } while pumpState.goAgain()
        pumpState.end()
        guard isOpen else { return }
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
        if readSide == .open {
            if tlsLayer != nil && connectionState.tlsHoldsData {
                // The handshake reads what it needs whatever reads are queued; while the delegate decides on
                // trust nothing is read at all (the bytes wait in the kernel, and level-triggered EPOLLIN
                // would only spin the loop).
                if tlsPhase == .handshaking { interest.insert(.readable) }
            } else if !asking.contains(.read) && !readsHeldByBackpressure && (wantsBytes ? pendingCount == 0
                : !readiness.contains(.idleWake) || (readBudget <= 0 && readiness.contains(.readable))) {
                interest.insert(.readable)
            }
            if !readiness.contains(.peerHungUp) { interest.insert(.readHangup) }
        }
        if readiness.contains(.writeBlocked) && (!writes.isEmpty || transportHasOutput) { interest.insert(.writable) }
        if interest.isEmpty && readSide != .open && writeSide == .shutDown {
            // Both directions are over (the peer's FIN and our shutdown): the kernel now reports EPOLLHUP,
            // which no interest mask can turn off, at every wait until the descriptor closes: a busy loop.
            // One-shot with no interest disarms the descriptor after that report; nothing needs it again.
            interest = .oneShot
        }
        do {
            try eventLoop.setInterest(interest, fd: fd)
        } catch {
            closeWithError(ConnectionError.loop(error))
        }
    }

    /// Closes the socket once the queues a `disconnectAfter…` (or the peer's end of stream) waits for are empty.
    /// The test for no ending at all is inlined into every pump pass; the rest is out of line.
    @inline(__always)
    func disconnectIfDone() {
        if ending != .none { disconnectIfDrained() }
    }

    @inline(never)
    private func disconnectIfDrained() {
        if ending.waitsForReads && !reads.isEmpty { return }
        if ending.waitsForWrites && (!writes.isEmpty || transportHasOutput) { return }
        closeWithError(ending == .afterWritesAtPeerEnd ? ConnectionError(.closedByPeer) : nil)
    }

    /// Ciphertext waits to be sent (TLS only).
    var transportHasOutput: Bool {
        if let tls = tlsLayer { return tls.hasOutput }
        return false
    }

    /// From now on calls from outside a callback pump at once (``PumpState/inline``): for a sink that never
    /// re-enters its caller, so that a write is sent, and a read queued, within the call.
    func pumpInline() {
        pumpState.insert(.inline)
    }
}
