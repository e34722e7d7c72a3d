import CEpollShim
import EpollLoop

extension EventLoop {
    /// Adds `amount` to one of the loop's socket counters (`CEPOLL_STREAM_BYTES_IN`, …; read back as
    /// `LoopMetrics.sockets`). Loop thread only: the counters have one writer. Inline, and no reference is
    /// retained around it: on the echo path it costs a load and two moves.
    @inline(__always)
    func countSocket(_ slot: Int, _ amount: Int = 1) {
        cepoll_counter_add(socketCounters, Int32(truncatingIfNeeded: slot), UInt64(truncatingIfNeeded: amount))
    }
}
