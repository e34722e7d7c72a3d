import EpollLoop
import FoundationEssentials

/// Queued reads, GCDAsyncSocket's way: each completes once, in order, with its tag.
extension GCDAsyncSocket {
    /// Reads whatever bytes are available (at least one).
    public func readData(withTimeout timeout: TimeInterval, tag: Int) {
        queueRead(.available, maxLength: 0, timeout: timeout, tag: tag, intoBuffer: nil)
    }

    /// Reads exactly `length` bytes. A length of 0 does nothing.
    public func readData(toLength length: UInt, withTimeout timeout: TimeInterval, tag: Int) {
        guard length > 0, length <= UInt(Int.max) else { return }
        queueRead(.length(Int(length)), maxLength: 0, timeout: timeout, tag: tag, intoBuffer: nil)
    }

    /// Reads up to and including `data`, the separator. An empty separator does nothing.
    public func readData(to data: Data, withTimeout timeout: TimeInterval, tag: Int) {
        readData(to: data, withTimeout: timeout, maxLength: 0, tag: tag)
    }

    /// Reads up to and including the separator; if `maxLength` bytes (when not 0) arrive without it, the
    /// socket disconnects with ``GCDAsyncSocketError/Code/readMaxedOutError``. A `maxLength` shorter than the
    /// separator, or an empty separator, does nothing.
    public func readData(to data: Data, withTimeout timeout: TimeInterval, maxLength: UInt, tag: Int) {
        guard !data.isEmpty, maxLength == 0 || maxLength >= UInt(data.count), maxLength <= UInt(Int.max) else { return }
        queueRead(.separator(data), maxLength: Int(maxLength), timeout: timeout, tag: tag, intoBuffer: nil)
    }

    /// Delivers every chunk as it arrives, as `socket(_:didRead:withTag:)` with `tag`, whenever no queued read
    /// is waiting (the continuous mode GCDAsyncSocket users asked for). Stop with ``stopReceiving()``.
    public func beginReceiving(tag: Int) {
        onLoop { [self] in startContinuous(tag: tag) }
    }

    /// Ends the continuous mode of ``beginReceiving(tag:)``.
    public func stopReceiving() {
        onLoop { [self] in stopContinuous() }
    }

    /// GCDAsyncSocket's progress of the current read: a fraction in 0…1, 1 for open-ended reads, NaN when
    /// no read is in progress. Loop only (or inside ``perform(_:)``).
    public func progressOfRead(
        returningTag tag: UnsafeMutablePointer<Int>?, bytesDone done: UnsafeMutablePointer<UInt>?,
        total: UnsafeMutablePointer<UInt>?
    ) -> Float {
        eventLoop.preconditionInEventLoop()
        guard let (progress, opTag) = reads.front({ ($0.progress, $0.tag) }) else { return .nan }
        let (bytesDone, bytesTotal) = progress
        tag?.pointee = opTag
        done?.pointee = UInt(bytesDone)
        total?.pointee = UInt(bytesTotal)
        return bytesTotal > 0 ? Float(bytesDone) / Float(bytesTotal) : 1
    }

    func queueRead(_ kind: ReadOp.Kind, maxLength: Int, timeout: TimeInterval, tag: Int, intoBuffer: ((Data) -> Void)?) {
        if eventLoop.inEventLoop {
            enqueueRead(ReadOp(kind: kind, maxLength: maxLength, tag: tag, timeout: timeout, id: 0, intoBuffer: intoBuffer))
        } else {
            let box = UncheckedSendable(ReadOp(kind: kind, maxLength: maxLength, tag: tag, timeout: timeout, id: 0, intoBuffer: intoBuffer))
            onLoop { [self] in enqueueRead(box.value) }
        }
    }
}
