import EpollLoop
import FoundationEssentials

// The engine side of `AsyncSocket`'s reads (Async/AsyncSocket+IO.swift), out of line on purpose: inlined into the `async` functions, their
// locals (a `ReadOp` is 88 bytes, and copies of it) become part of the async frame, which lives in the task's
// allocator for as long as the read waits. That frame is what an idle connection's task holds: with them
// inlined, `read(maxLength:)` asked its caller for a 480-byte context, and the connection task overflowed its
// allocator's first 1 KiB slab into a second one (see docs/benchmarks.md, idle memory of the async server).
extension ConnectionEngine {
    /// Queues a read for a task that is on the loop, or posts it to the loop if the task left it on the way
    /// here (a caller isolated to an actor that is not the loop's). `async` reads only. `checkCancelled`:
    /// whether a cancellation handler may already have run and missed the read (see the callers).
    @inline(never)
    func queueAsyncRead(_ kind: consuming ReadOp.Kind, maxLength: Int, id: UInt32, continuation: ReadContinuation, checkCancelled: Bool) {
        guard eventLoop.inEventLoop else {
            return postQueuedAsyncRead(kind, maxLength: maxLength, id: id, continuation: continuation)
        }
        // Built in the call, so the operation is moved into the queue, not copied.
        enqueueAsyncRead(ReadOp(kind: kind, maxLength: maxLength, tag: 0, timeout: -1, id: id, continuation: continuation))
        // A cancellation that arrived before the read was queued (its handler ran and found no read) is seen
        // here. A later one finds the read by its id.
        if checkCancelled && Task.isCancelled { cancelRead(id: id) }
    }

    /// `queueAsyncRead` from a task that left the loop on the way: both posts come from this thread, so a
    /// cancellation posted here reaches the loop after the read; a later one goes through the cancellation
    /// handler.
    private func postQueuedAsyncRead(_ kind: ReadOp.Kind, maxLength: Int, id: UInt32, continuation: ReadContinuation) {
        let box = UncheckedSendable(ReadOp(kind: kind, maxLength: maxLength, tag: 0, timeout: -1, id: id, continuation: continuation))
        let queued = onLoop { [self] in enqueueAsyncRead(box.value) }
        if !queued { return continuation.handOff(throwing: sinkError(ConnectionError(.loopShutDown))) }
        if Task.isCancelled { onLoop { [self] in cancelRead(id: id) } }
    }

    /// Posts a read from a task on another thread to the loop, where whichever of it and a cancellation
    /// arrives first decides.
    @inline(never)
    func postAsyncRead(
        _ kind: ReadOp.Kind, maxLength: Int, cancellation: PendingCancellation<UInt32>, continuation: ReadContinuation
    ) {
        let box = UncheckedSendable(ReadOp(kind: kind, maxLength: maxLength, tag: 0, timeout: -1, id: 0, continuation: continuation))
        let queued = onLoop { [self] in
            if cancellation.cancelled { return continuation.handOff(throwing: CancellationError()) }
            var op = box.value
            op.id = reserveOpID()
            cancellation.id = op.id
            enqueueAsyncRead(op)
        }
        if !queued { continuation.handOff(throwing: sinkError(ConnectionError(.loopShutDown))) }
    }

    /// Completes a read from the prebuffer at once when possible (no read queued ahead of it, the socket
    /// connected). Returns nil when the read must wait. Loop only.
    @inline(never)
    func readImmediately(_ kind: ReadOp.Kind, maxLength: Int) throws -> Data? {
        guard isOpen, reads.isEmpty, pendingCount > 0 else { return nil }
        var op = ReadOp(kind: kind, maxLength: maxLength, tag: 0, timeout: -1, id: 0)
        let outcome = pending.withUnsafeBytes { all in op.feed(UnsafeRawBufferPointer(rebasing: all[pendingStart...])) }
        switch outcome {
        case .complete(let used, let data):
            pendingStart += used
            if pendingStart == pending.count {
                pending = []
                pendingStart = 0
            }
            return data
        case .needMore, .maxedOut, .blocked:
            return nil  // Nothing consumed: `op` was a scratch copy; the queued read will take the bytes.
        }
    }

    /// Queues an `async` read with the id it was given, or fails it at once if the socket is not connected.
    func enqueueAsyncRead(_ op: consuming ReadOp) {
        guard case .proceed = connectionState.handle(.readQueued) else {
            op.continuation?.handOff(throwing: sinkError(ConnectionError(.notOpen)))
            return
        }
        // A pump is needed only if there is something to feed the read (bytes buffered or signalled) or
        // EPOLLIN to register; otherwise the read just waits for the next readiness event.
        let mustPump = pendingCount > 0 || !readiness.isDisjoint(with: [.readable, .idleWake])
            || eventLoop.interest(of: fd)?.contains(.readable) != true
        reads.append(op)
        readiness.remove(.idleWake)
        if mustPump { requestPump() }
    }
}
