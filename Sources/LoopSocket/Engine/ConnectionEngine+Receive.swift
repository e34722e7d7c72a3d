import CEpollShim
import EpollLoop
import FoundationEssentials

/// The read engine: queued reads fed from the prebuffer and the kernel, in order, each completing once
/// through the sink; continuous mode; the end of the stream.
extension ConnectionEngine {
    /// Reads are accepted once a connect or accept has started, until a `disconnectAfter…` (GCDAsyncSocket's
    /// rule); others are dropped silently, as there.
    func enqueueRead(_ op: consuming ReadOp) {
        guard case .proceed = connectionState.handle(.readQueued) else { return }
        op.id = reserveOpID()
        if op.timeout >= 0 { traits.insert(.timedOps) }
        reads.append(op)
        readiness.remove(.idleWake)
        requestPump()
    }

    /// A fresh operation id (ids only need to be unique among queued operations; they tie timers and
    /// cancellations to the operation they were meant for).
    func reserveOpID() -> UInt32 {
        defer { nextOpID &+= 1 }
        return nextOpID
    }

    // MARK: The read engine

    /// Whether reads wait for the queued writes to drain (``SocketOptions/ReadBackpressure``). Never while
    /// `startTLS` is queued: the writes behind its marker cannot go out before the reads ahead of it have
    /// completed and the handshake has run, so holding those reads would wait forever (a server that
    /// queues a read, startTLS and a large reply must still reach the handshake).
    @inline(__always)
    var readsHeldByBackpressure: Bool {
        guard writability == .notWritableReadsPaused else { return false }
        return !tlsQueued
    }

    /// Ciphertext already in the TLS layer's input, which no EPOLLIN will report.
    var transportHasStash: Bool {
        if let tls = tlsLayer { return !tls.stash.isEmpty }
        return false
    }

    /// Bytes waiting in the prebuffer.
    var pendingCount: Int { pending.count - pendingStart }

    /// Whether reads should be fed (a read is queued, or continuous mode is on and not paused).
    /// Inlined, and the lock taken out of line: it is tested on every pump pass and per chunk, and only
    /// continuous mode needs the lock.
    @inline(__always)
    var wantsBytes: Bool {
        !reads.isEmpty || (continuous == .on && !continuousIsPaused)
    }

    /// Whether continuous mode waits for the delegate to catch up (``SharedState/continuousPaused``).
    @inline(never)
    private var continuousIsPaused: Bool {
        withSharedState { $0.continuousPaused }
    }

    /// Satisfies reads from the prebuffer, then from the socket while it is readable, for at most the
    /// wakeup's read budget; nothing while writes back up (``SocketOptions/ReadBackpressure``).
    func readLoop() {
        while isOpen && !asking.contains(.read) && !readsHeldByBackpressure {
            if tlsQueued, reads.front({ $0.isStartTLS }) == true {
                beginTLSIfBothQueuesReady()
                return
            }
            if !wantsBytes {
                // Nobody reads: leave data in the kernel (backpressure) unless the peer has hung up, in which
                // case what it sent is drained so the end of the stream is seen now, not at the next read.
                if readSide != .open {
                    if pendingCount == 0 && readSide != .endDelivered { _ = handleEndOfStream() }
                    return
                }
                guard readiness.contains([.peerHungUp, .readable]), readBudget > 0 else { return }
                receive(intoPrebufferOnly: true)
                continue
            }
            if pendingCount > 0 {
                feedFromPrebuffer()
                continue
            }
            if readSide != .open {
                if handleEndOfStream() { continue }
                return
            }
            // Ciphertext already in the TLS layer's input (what came behind the handshake's last message) is
            // read whatever the budget: it is not in the kernel, so no EPOLLIN would ever report it.
            guard (readBudget > 0 && readiness.contains(.readable)) || transportHasStash else { return }
            receive(intoPrebufferOnly: false)
        }
    }

    /// One `recv` into the loop's shared buffer, fed straight to the reads; leftovers go to the prebuffer.
    private func receive(intoPrebufferOnly: Bool) {
        if let tls = tlsLayer {
            receiveTLS(tls, intoPrebufferOnly: intoPrebufferOnly)
            return
        }
        let buffer = context.receiveBuffer
        switch receiveChunk(into: buffer) {
        case .nothing:
            break
        case .endOfStream:
            peerFinished()
        case .bytes(let count):
            if !intoPrebufferOnly && count >= LoopContext.handOffThreshold && frontReadTakesAll(count) {
                deliverWhole(context.handOffReceiveBuffer(count: count))
                return
            }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            let used = intoPrebufferOnly ? 0 : feed(bytes)
            if used < count && isOpen {
                pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[used...]))
            }
        }
    }

    /// What one `recv` into the loop's receive buffer brought.
    enum Chunk {
        /// Nothing to read now, or the socket closed with the error.
        case nothing
        case endOfStream
        /// That many bytes at the start of the buffer.
        case bytes(Int)
    }

    /// One `recv` into `buffer` (the loop's receive buffer), counted against the wakeup's read budget; a
    /// failure closes the socket. The one receive path for plaintext, handshake and TLS records.
    func receiveChunk(into buffer: UnsafeMutableRawBufferPointer) -> Chunk {
        let result: IOResult<Int>
        do {
            result = try Syscall.recv(fd, buffer)
        } catch {
            closeWithError(ConnectionError(error))
            return .nothing
        }
        switch result {
        case .wouldBlock:
            readiness.remove(.readable)
            return .nothing
        case .processed(0):
            readiness.remove(.readable)
            return .endOfStream
        case .processed(let count):
            readBudget -= 1
            eventLoop.countSocket(CEPOLL_STREAM_BYTES_IN, count)
            // A short read drained the socket; level-triggered epoll says when more arrives. Once the peer
            // has hung up, read on instead: the next `recv` returns 0 and the end of the stream is seen now
            // (EPOLLIN is not watched while no read is queued, so nothing else would report it).
            if count < buffer.count && !readiness.contains(.peerHungUp) { readiness.remove(.readable) }
            return .bytes(count)
        }
    }

    /// Whether the next read would take all of a `count`-byte chunk: a read of available bytes without a
    /// smaller cap, or continuous mode with no read queued.
    private func frontReadTakesAll(_ count: Int) -> Bool {
        guard let takesAll = reads.front({ op -> Bool in
            guard case .available = op.kind else { return false }
            return op.maxLength == 0 || op.maxLength >= count
        }) else {
            return wantsBytes
        }
        return takesAll
    }

    /// Delivers a chunk that ``frontReadTakesAll(_:)`` said the next read takes whole.
    private func deliverWhole(_ data: Data) {
        if reads.isEmpty {
            deliverContinuous(data)
        } else {
            finishRead(reads.removeFirst(), with: data)
        }
    }

    /// Delivers a chunk of ``beginReceiving(tag:)``.
    private func deliverContinuous(_ data: Data) {
        sinkReport(.continuousChunk(data))
    }

    /// The tag of a continuous chunk the sink delivers inline (the loop itself waits for the callback).
    /// Loop only.
    var continuousChunkTag: Int { withSharedState { $0.continuousTag } }

    /// The tag of a continuous chunk the sink sends to a queue of its own, where it counts as in flight
    /// until `delivered` runs there: reading pauses at ``SocketOptions/maxUndeliveredChunks`` until the
    /// delegate catches up. Loop only.
    func dispatchContinuousChunk() -> (tag: Int, delivered: @Sendable () -> Void) {
        let limit = max(1, config.options.maxUndeliveredChunks)
        let tag = withSharedState { $0.continuousChunkDispatched(limit: limit) }
        return (tag, { [self] in
            guard withSharedState({ $0.continuousChunkDelivered(limit: limit) }) else { return }
            onLoop { [self] in
                readiness.remove(.idleWake)
                requestPump()
            }
        })
    }

    private func feedFromPrebuffer() {
        let used = pending.withUnsafeBytes { all in
            feed(UnsafeRawBufferPointer(rebasing: all[pendingStart...]))
        }
        guard isOpen else { return }
        pendingStart += used
        if pendingStart == pending.count {
            pending = []
            pendingStart = 0
        }
    }

    /// Feeds `bytes` to the queued reads, completing as many as they satisfy; returns the bytes used.
    /// Delegate callbacks run in here, and may queue reads, write, or disconnect.
    func feed(_ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while offset < bytes.count && isOpen && !asking.contains(.read) {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            if reads.isEmpty {
                guard wantsBytes else { break }
                offset += rest.count
                deliverContinuous(ReadOp.copy(rest, rest.count))
                continue
            }
            let outcome = reads.withFirst { $0.feed(rest) }
            switch outcome {
            case .needMore(let used):
                offset += used
                if used > 0 {
                    let tag = reads.front { $0.tag }!
                    sinkReport(.readProgress(length: used, tag: tag))
                }
            case .complete(let used, let data):
                offset += used
                finishRead(reads.removeFirst(), with: data)
            case .maxedOut:
                closeWithError(ConnectionError(.readMaxedOut))
                return offset
            case .blocked:
                return offset
            }
        }
        return offset
    }

    /// The peer sends nothing more (`recv` returned 0, or TLS's close_notify came): nothing is left to read
    /// (the read loop then sees the end once the prebuffer is empty).
    func peerFinished() {
        if case .proceed = connectionState.handle(.peerFinished) { readiness.remove(.readable) }
    }

    /// The peer will send nothing more and the prebuffer is empty, but reads are waiting.
    ///
    /// With `autoDisconnectOnClosedReadStream` (the default) the socket stops reading, lets queued writes
    /// finish, and then disconnects with ``GCDAsyncSocketError/Code/closedError``: a reply queued to the
    /// peer's last request is not lost. Without it, `socketDidCloseReadStream` is called once; the bytes of
    /// an unfinished read go back to the prebuffer (a read of available bytes returns them) and reads that
    /// cannot complete fail with `didFailToReadDataWithTag`.
    /// Returns true if it removed a read (the read loop goes on), false if reading is over.
    func handleEndOfStream() -> Bool {
        switch connectionState.handle(.endOfStream(autoDisconnect: config.autoDisconnectOnClosedReadStream)) {
        case .dropReadsUntilClose:
            dropReads(with: ConnectionError(.closedByPeer))
            return false
        case .reportEndOfStream:
            sinkReport(.readStreamClosed)
        case .failFrontRead:
            break
        default:
            return false
        }
        guard isOpen, !reads.isEmpty else { return false }
        let op = reads.removeFirst()
        if !op.buffer.isEmpty {
            pending.insert(contentsOf: op.buffer, at: pendingStart)
        }
        failRead(op, with: ConnectionError(.closedByPeer))
        return true
    }

    /// Delivers a completed read: to its `async` waiter, or to the delegate (and the caller's buffer).
    /// Apart from ``failRead(_:with:)``: a `Result` carrying the engine's error is five words, copied and
    /// destroyed through outlined value witnesses on every read (callgrind, echo-server).
    func finishRead(_ op: borrowing ReadOp, with data: Data) {
        if let continuation = op.continuation {
            continuation.handOff(returning: data)
            return
        }
        op.intoBuffer?(data)
        sinkDidRead(data, tag: op.tag)
    }

    /// Fails a read: its `async` waiter throws the face's error, or the delegate hears of it.
    func failRead(_ op: borrowing ReadOp, with error: ConnectionError) {
        if let continuation = op.continuation {
            continuation.handOff(throwing: sinkError(error))
            return
        }
        sinkReport(.readFailed(tag: op.tag, error: error))
    }

    /// Drops every queued read: silently for delegate reads (GCDAsyncSocket's rule), with `error` for
    /// `async` ones, so no continuation is ever left hanging. `keepingStartTLS` (disconnectAfterWriting)
    /// keeps startTLS's marker: its twin in the write queue waits for it, and the writes behind it go
    /// over TLS.
    func dropReads(with error: ConnectionError, keepingStartTLS: Bool = false) {
        // Drained in place: a closing connection usually has one read queued, and an array of it would be one
        // more allocation per connection. Kept markers go back once the queue is empty.
        var kept: [ReadOp] = []
        reads.drain { op in
            if keepingStartTLS && op.isStartTLS {
                kept.append(op)
            } else {
                op.continuation?.handOff(throwing: sinkError(error))
            }
        }
        reads.useInlineSlot(inlineReadSlot)  // if the queue had grown out of it
        for op in kept { reads.append(op) }
    }

    /// Cancels the `async` read with operation id `id`, if it is still queued: removed from the queue (an
    /// unfinished read's bytes go back to the prebuffer, so the socket stays usable) and resumed with
    /// `CancellationError`. Returns false if no such read was queued. Loop only.
    @discardableResult
    func cancelRead(id: UInt32) -> Bool {
        guard let (op, wasFront) = reads.remove(where: { $0.id == id && $0.continuation != nil }) else { return false }
        if wasFront && !op.buffer.isEmpty {
            pending.insert(contentsOf: op.buffer, at: pendingStart)
        }
        op.continuation?.handOff(throwing: CancellationError())
        if wasFront { requestPump() }
        return true
    }

    // MARK: Continuous mode

    /// `beginReceiving(tag:)` on the loop: ignored unless connecting or connected.
    func startContinuous(tag: Int) {
        guard case .pump = connectionState.handle(.continuousStarted) else { return }
        readiness.remove(.idleWake)
        withSharedState { $0.continuousTag = tag }
        requestPump()
    }

    /// `stopReceiving()` on the loop.
    func stopContinuous() {
        if case .pump = connectionState.handle(.continuousStopped) { requestPump() }
    }
}
