import EpollLoop
import FoundationEssentials

/// Read and write timeouts, on the loop's timer wheel. A timer starts when its operation reaches the front of
/// its queue (GCDAsyncSocket's rule); one timer per direction is reused from operation to operation, so a
/// busy connection moves a deadline instead of allocating timers.
extension ConnectionEngine {
    enum Direction {
        case read, write
    }

    func updateTimers() {
        // Most connections never queue an operation with a timeout (echo and proxy loops, async reads).
        guard traits.contains(.timedOps) else { return }
        let read = reads.front { (id: $0.id, timeout: $0.timeout) }
        if readTimerOp != read?.id ?? .max || (read == nil && readTimer != .invalid) {
            armTimer(.read, op: read)
        }
        let write = writes.front { (id: $0.id, timeout: $0.timeout) }
        if writeTimerOp != write?.id ?? .max || (write == nil && writeTimer != .invalid) {
            armTimer(.write, op: write)
        }
    }

    /// Points the direction's timer at `op` (its id and timeout), or cancels it.
    private func armTimer(_ direction: Direction, op: (id: UInt32, timeout: TimeInterval)?) {
        let timer = direction == .read ? readTimer : writeTimer
        guard let op, op.timeout >= 0 else {
            // Most operations have no timeout: then there is no timer to cancel either.
            if timer != .invalid { eventLoop.cancelOnLoop(timer) }
            setTimer(direction, .invalid, op: op?.id ?? .max)
            return
        }
        let deadline = Self.deadline(after: op.timeout)
        if eventLoop.rescheduleOnLoop(timer, at: deadline) {
            setTimer(direction, timer, op: op.id)
        } else {
            let id = eventLoop.scheduleOnLoop(at: deadline) { [self] in timerFired(direction) }
            setTimer(direction, id, op: op.id)
        }
    }

    private func setTimer(_ direction: Direction, _ id: TimerID, op: UInt32) {
        switch direction {
        case .read:
            readTimer = id
            readTimerOp = op
        case .write:
            writeTimer = id
            writeTimerOp = op
        }
    }

    static func deadline(after seconds: TimeInterval) -> UInt64 {
        let nanos = min(seconds, 1e9) * 1e9
        return Deadline.now().uptimeNanoseconds &+ UInt64(nanos.rounded(.up))
    }

    /// The operation at the front ran out of time: ask the sink whether to extend it.
    private func timerFired(_ direction: Direction) {
        guard isOpen else { return }
        let front: (id: UInt32, tag: Int, elapsed: TimeInterval, done: Int)?
        switch direction {
        case .read:
            readTimer = .invalid
            front = reads.front { ($0.id, $0.tag, $0.timeout, $0.buffer.count) }
        case .write:
            writeTimer = .invalid
            front = writes.front { ($0.id, $0.tag, $0.timeout, $0.done) }
        }
        guard let front else { return }
        let question: TimeoutQuestions = direction == .read ? .read : .write
        let generation = config.generation
        let answer = TimeoutAnswer { [self] more in
            onLoop(ifStill: generation) { [self] in
                guard isOpen else { return }
                asking.remove(question)
                resolveTimeout(direction, op: front.id, extension: more)
            }
        }
        // Until the answer comes back (at once, or later from the sink's queue) the direction pauses.
        asking.insert(question)
        sinkReport(.timeoutAsked(direction, tag: front.tag, elapsed: front.elapsed, done: front.done, answer: answer))
        if let more = answer.now {
            asking.remove(question)
            resolveTimeout(direction, op: front.id, extension: more)
        }
    }

    /// Extends the operation by `extension` seconds, or times it out: the whole connection (GCDAsyncSocket's
    /// behaviour) or, with `timeoutsFailOnlyTheOperation`, only the operation, unless it is a write that has
    /// begun, which still closes the connection.
    private func resolveTimeout(_ direction: Direction, op id: UInt32, extension more: TimeInterval) {
        guard isOpen else { return }
        let stillFront = direction == .read ? reads.front { $0.id } == id : writes.front { $0.id } == id
        guard stillFront else {
            pump()
            return
        }
        if more > 0 {
            switch direction {
            case .read:
                reads.withFirst { $0.timeout += more }
                readTimer = eventLoop.scheduleOnLoop(at: Self.deadline(after: more)) { [self] in timerFired(.read) }
            case .write:
                writes.withFirst { $0.timeout += more }
                writeTimer = eventLoop.scheduleOnLoop(at: Self.deadline(after: more)) { [self] in timerFired(.write) }
            }
            pump()
            return
        }
        let error = ConnectionError(direction == .read ? .readTimeout : .writeTimeout)
        guard config.timeoutsFailOnlyTheOperation, direction == .read || !frontWriteStarted else {
            // A write that has begun cannot be failed alone: its first bytes are on the wire (or encrypted
            // into TLS records), and the next write's bytes would follow them as if they were its rest.
            closeWithError(error)
            return
        }
        switch direction {
        case .read:
            let op = reads.removeFirst()
            if !op.buffer.isEmpty { pending.insert(contentsOf: op.buffer, at: pendingStart) }
            failRead(op, with: error)
        case .write:
            // Not one byte of it went out: the stream stays whole without it.
            let op = writes.removeFirst()
            queuedWriteBytes -= op.remaining
            sinkReport(.writeFailed(tag: op.tag, error: error))
        }
        pump()
    }
}

extension ConnectionEngine {
    /// Whether the front write has handed bytes to the kernel, or to TLS (whose records then carry them):
    /// encrypted plaintext always belongs to the front writes, in order.
    var frontWriteStarted: Bool {
        if writes.front({ $0.done > 0 }) == true { return true }
        if let tls = tlsLayer { return tls.encryptedPlaintext > 0 }
        return false
    }
}
