import EpollLoop
import Glibc

/// Disconnecting: at once, or after the queued reads and/or writes.
extension GCDAsyncSocket {
    /// Disconnects now, dropping queued reads and writes (each dropped write is reported through
    /// `didFailToWriteDataWithTag`), then calls `socketDidDisconnect(_:withError:)` with a nil error.
    /// From another thread the socket reports itself disconnected at once and closes on its loop. Input the
    /// peer sent and nobody read (up to 256 KiB) is read and dropped first, so the peer's kernel gets a FIN,
    /// not a reset that would discard the last bytes written to it before the peer read them.
    public func disconnect() {
        if eventLoop.inEventLoop {
            closeWithError(nil)
            return
        }
        publish(.idle)
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
        onLoop { [self] in end(after: which) }
    }
}
