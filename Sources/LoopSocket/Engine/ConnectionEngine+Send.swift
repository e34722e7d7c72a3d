import CEpollShim
import EpollLoop
import FoundationEssentials
import Glibc

/// The write engine: queued writes tried at once, gathered into one `sendmsg`, EPOLLOUT armed only when the
/// kernel is full; water marks; the write side's shutdown.
extension ConnectionEngine {
    /// An ``AsyncSocket``'s write, on the loop: sent within the call when nothing is queued ahead of it, and
    /// queued for the pump only with what the kernel did not take. A write the kernel takes whole changes
    /// nothing the pump would look at afterwards (no read to feed, no interest to arm, no timer), so that
    /// pass is skipped; its completion callback is too: the async handler has none for writes.
    func sendOrEnqueue(_ data: Data) {
        let count = data.count
        guard pumpState.contains(.inline), !pumpState.contains(.pumping), isOpen, writes.isEmpty, connectionState.tlsIs(.plain),
              !readiness.contains(.writeBlocked), ending == .none, writeSide == .open,
              count <= config.options.maxQueuedWriteBytes ?? .max
        else { return enqueueWrite(data, timeout: -1, tag: 0) }
        let result = data.withUnsafeBytes { raw in
            Self.result { () throws(SyscallError) in try Syscall.send(fd, raw) }
        }
        if case .sent(let sent) = result { eventLoop.countSocket(CEPOLL_STREAM_BYTES_OUT, sent) }
        switch result {
        case .sent(let sent) where sent == count:
            return
        case .sent(let sent):
            enqueueWrite(data, timeout: -1, tag: 0, alreadySent: sent)
        case .wouldBlock:
            readiness.insert(.writeBlocked)  // The pump then arms EPOLLOUT without trying the send again.
            enqueueWrite(data, timeout: -1, tag: 0)
        case .failed(let error):
            closeWithError(ConnectionError(error))
        }
    }

    /// Queues a write (`alreadySent` of its bytes handed to the kernel by ``sendOrEnqueue(_:)``) and asks
    /// for a pump, or reports at once why it cannot be queued.
    func enqueueWrite(_ data: Data, timeout: TimeInterval, tag: Int, alreadySent: Int = 0) {
        let count = data.count
        if case .refuse(let reason) = connectionState.handle(.writeQueued) {
            sinkReport(.writeFailed(tag: tag, error: ConnectionError(reason)))
            return
        }
        if let cap = config.options.maxQueuedWriteBytes, queuedWriteBytes + count > cap {
            let error = ConnectionError(.writeQueueFull, detail: "\(queuedWriteBytes) bytes queued, cap \(cap)")
            sinkReport(.writeFailed(tag: tag, error: error))
            return
        }
        if timeout >= 0 { traits.insert(.timedOps) }
        writes.append(WriteOp(data: data, count: count, done: alreadySent, tag: tag, timeout: timeout, id: reserveOpID()))
        queuedWriteBytes += count - alreadySent
        if queuedWriteBytes > config.options.writeHighWaterMark && writability == .writable,
           case .reportWritability(let writable, _) = connectionState.handle(.overHighWater(pausesReads: pausesReadsWhileNotWritable)) {
            sinkReport(.writabilityChanged(writable))
        }
        requestPump()
    }

    /// Whether going over the high water mark pauses reading (``SocketOptions/ReadBackpressure``).
    var pausesReadsWhileNotWritable: Bool {
        switch config.options.readBackpressure {
        case .acceptedSockets: traits.contains(.accepted)
        case .always: true
        case .never: false
        }
    }

    // MARK: The write engine

    enum SendResult {
        case sent(Int)
        case wouldBlock
        case failed(SyscallError)
    }

    /// Writes queued data until the queue is empty or the kernel buffer is full.
    func writeLoop() {
        if let tls = tlsLayer {
            writeLoopTLS(tls)
            return
        }
        while isOpen && !writes.isEmpty && !readiness.contains(.writeBlocked) && !asking.contains(.write) {
            if tlsQueued, writes.front({ $0.isStartTLS }) == true {
                beginTLSIfBothQueuesReady()
                return
            }
            switch sendQueued() {
            case .wouldBlock:
                readiness.insert(.writeBlocked)
            case .failed(let error):
                closeWithError(ConnectionError(error))
                return
            case .sent(let count):
                eventLoop.countSocket(CEPOLL_STREAM_BYTES_OUT, count)
                completeWrites(count)
            }
        }
        guard isOpen, writes.isEmpty else { return }
        shutDownWriteSideIfAsked()
    }

    /// `closeWriteStream`'s `shutdown(SHUT_WR)`, once the queued writes are all written.
    func shutDownWriteSideIfAsked() {
        guard case .shutDownWriteSide = connectionState.handle(.writesDrained) else { return }
        do {
            try Syscall.shutdown(fd, how: Int32(SHUT_WR))
        } catch {
            closeWithError(ConnectionError(error))
        }
    }

    /// Hands the first queued writes to the kernel: one `send`, or one `sendmsg` gathering up to 64.
    private func sendQueued() -> SendResult {
        var count = min(writes.count, LoopContext.maxGather)
        if tlsQueued {
            // Nothing behind startTLS's marker goes out in plaintext.
            count = (0..<count).first { i in writes.at(i) { $0.isStartTLS } } ?? count
        }
        if count == 1 {
            return writes.front { op in
                op.data.withUnsafeBytes { raw in
                    Self.result { () throws(SyscallError) in
                        try Syscall.send(fd, UnsafeRawBufferPointer(rebasing: raw[op.done...]))
                    }
                }
            }!
        }
        return gather(0, count, context.iovecs)
    }

    /// Fills `iov[i...]` with the unwritten bytes of writes `i..<count` (each borrowed for the duration of
    /// the call, hence the recursion) and sends them.
    private func gather(_ i: Int, _ count: Int, _ iov: UnsafeMutablePointer<iovec>) -> SendResult {
        if i == count {
            return Self.result { () throws(SyscallError) in try Syscall.sendv(fd, iov, count: count) }
        }
        return writes.at(i) { op in
            op.data.withUnsafeBytes { raw in
                iov[i] = iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress! + op.done), iov_len: op.remaining)
                return gather(i + 1, count, iov)
            }
        }
    }

    /// One send's outcome. Static, so that the closures around it capture no `self` (they borrow the
    /// queued write in place; capturing `self` made the compiler copy it out). The caller counts the bytes.
    static func result(_ body: () throws(SyscallError) -> IOResult<Int>) -> SendResult {
        do {
            switch try body() {
            case .processed(let n):
                return .sent(n)
            case .wouldBlock: return .wouldBlock
            }
        } catch {
            return .failed(error)
        }
    }

    /// Accounts `count` written bytes to the queued writes, then tells the delegate. All accounting happens
    /// first, so a callback that disconnects cannot report a written write as failed.
    func completeWrites(_ count: Int) {
        var left = count
        var firstTag: Int?
        var moreTags: [Int] = []
        var partial: (tag: Int, bytes: Int)?
        while left > 0, let (remaining, tag) = writes.front({ ($0.remaining, $0.tag) }) {
            if left >= remaining {
                left -= remaining
                writes.removeFirst()
                if firstTag == nil { firstTag = tag } else { moreTags.append(tag) }
            } else {
                writes.withFirst { $0.done += left }
                partial = (tag, left)
                left = 0
            }
        }
        queuedWriteBytes -= count
        if writability != .writable && queuedWriteBytes <= config.options.writeLowWaterMark,
           case .reportWritability(let writable, let resumeReads) = connectionState.handle(.underLowWater) {
            // Reads paused for backpressure go on in this pump's next round.
            if resumeReads { requestPump() }
            sinkReport(.writabilityChanged(writable))
        }
        if let firstTag { sinkDidWrite(tag: firstTag) }
        for tag in moreTags { sinkDidWrite(tag: tag) }
        if let partial {
            sinkReport(.writeProgress(length: partial.bytes, tag: partial.tag))
        }
    }

    /// `closeWriteStream()` on the loop: the write side's one transition from `open`.
    func shutDownWriteSideAfterWrites() {
        if case .pump = connectionState.handle(.writeShutdownAsked) { requestPump() }
    }
}
