import EpollLoop
import FoundationEssentials
import Glibc

/// Queued writes: tried at once, gathered into one `sendmsg`, EPOLLOUT armed only when the kernel is full.
extension GCDAsyncSocket {
    /// Queues `data` for writing. Empty data does nothing. The write ends in `socket(_:didWriteDataWithTag:)`
    /// or, if it can never complete, in `socket(_:didFailToWriteDataWithTag:error:)`.
    public func write(_ data: Data, withTimeout timeout: TimeInterval, tag: Int) {
        guard !data.isEmpty else { return }
        if eventLoop.inEventLoop {
            enqueueWrite(data, timeout: timeout, tag: tag)
        } else if !onLoop({ [self] in enqueueWrite(data, timeout: timeout, tag: tag) }) {
            // The loop is gone: the write can only fail, and the delegate is told where it can be.
            let box = UncheckedSendable((delegate, delegateQueue))
            if let delegate = box.value.0 {
                let fail = UncheckedSendable {
                    delegate.socket(self, didFailToWriteDataWithTag: tag, error: GCDAsyncSocketError.loopShutDown)
                }
                if let queue = box.value.1 { queue.async { fail.value() } } else { fail.value() }
            }
        }
    }

    /// Shuts down the write side (`shutdown(SHUT_WR)`) once the queued writes are written: the peer sees
    /// end-of-stream while this socket can still read its reply (a half-close GCDAsyncSocket users long asked for).
    public func closeWriteStream() {
        onLoop { [self] in shutDownWriteSideAfterWrites() }
    }

    /// Bytes queued for writing and not yet handed to the kernel. Loop only.
    public var queuedWriteByteCount: Int {
        eventLoop.preconditionInEventLoop()
        return queuedWriteBytes
    }

    /// GCDAsyncSocket's progress of the current write: a fraction in 0…1, or NaN when nothing is being written.
    /// Loop only (or inside ``perform(_:)``).
    public func progressOfWrite(
        returningTag tag: UnsafeMutablePointer<Int>?, bytesDone done: UnsafeMutablePointer<UInt>?,
        total: UnsafeMutablePointer<UInt>?
    ) -> Float {
        eventLoop.preconditionInEventLoop()
        guard let op = writes.front({ (tag: $0.tag, done: $0.done, total: $0.count) }) else { return .nan }
        tag?.pointee = op.tag
        done?.pointee = UInt(op.done)
        total?.pointee = UInt(op.total)
        return Float(op.done) / Float(op.total)
    }
}
