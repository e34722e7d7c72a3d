import EpollLoop

// The connection engine's state: one small enum per thing that changes on its own, so that a combination
// that cannot happen cannot be written (a write side shut down while still waiting to shut down, the end of
// the stream delivered before the peer finished, TLS queued and running at once). A bit set remains only
// where the bits are truly independent facts (pump scheduling, what epoll last said).
//
// All of it is confined to the socket's loop. Each is one byte, or one word for the enums with a payload.

extension ConnectionEngine {
    /// Where the connection is in its life. After a close it returns to `idle` and may connect or listen again.
    enum Lifecycle: UInt8 {
        case idle
        /// Resolving and connecting (Happy Eyeballs attempts run in `DialState`).
        case connecting
        /// Accepting on one or more listening descriptors.
        case listening
        /// An accepted descriptor set up but not yet registered with the loop: `didAcceptNewSocket` runs
        /// first. Reads and writes may be queued; nothing is delivered.
        case starting
        /// Connected: the pump moves bytes.
        case open
    }

    /// The status the getters report, published under the lock (``SharedState/status``).
    enum Status: Equatable {
        case idle
        case connecting
        case accepting
        case connected
    }

    /// The receiving direction.
    enum ReadSide: UInt8 {
        case open
        /// `recv` returned 0 (or TLS's close_notify came): the peer will send nothing more.
        case peerFinished
        /// The end was delivered (`socketDidCloseReadStream`); reads that cannot complete fail.
        case endDelivered
    }

    /// The sending direction.
    enum WriteSide: UInt8 {
        case open
        /// `closeWriteStream()`: shut down once the queued writes are written; new writes are refused.
        case shutdownAfterWrites
        /// `shutdown(SHUT_WR)` done (after TLS's close_notify, over TLS).
        case shutDown
    }

    /// How an open connection is to end, other than at once. Anything but `.none` refuses new reads and
    /// writes (GCDAsyncSocket's rule after a `disconnectAfter…`).
    enum Ending: UInt8 {
        case none
        /// `disconnectAfterReading()`: close once the queued reads complete.
        case afterReads
        /// `disconnectAfterWriting()`: close once the queued writes are written.
        case afterWrites
        case afterReadsAndWrites
        /// The peer finished (with `autoDisconnectOnClosedReadStream`): close with `closedError` once the
        /// queued writes are written, so the reply to its last request is not lost.
        case afterWritesAtPeerEnd

        /// The ending once `other` is asked for too (the peer's end counts as `afterWritesAtPeerEnd`).
        func adding(_ other: Ending) -> Ending {
            switch (self, other) {
            case (.none, _): return other
            case (_, .none): return self
            case (.afterReadsAndWrites, _), (_, .afterReadsAndWrites): return .afterReadsAndWrites
            case (.afterReads, .afterReads): return .afterReads
            case (.afterReads, _), (_, .afterReads): return .afterReadsAndWrites
            case (.afterWritesAtPeerEnd, _), (_, .afterWritesAtPeerEnd): return .afterWritesAtPeerEnd
            case (.afterWrites, .afterWrites): return .afterWrites
            }
        }

        var waitsForReads: Bool { self == .afterReads || self == .afterReadsAndWrites }
        var waitsForWrites: Bool { self == .afterWrites || self == .afterReadsAndWrites || self == .afterWritesAtPeerEnd }
    }

    /// Whether the write queue is over its high water mark (``SocketOptions/writeHighWaterMark``).
    enum Writability: UInt8 {
        case writable
        case notWritable
        /// Not writable, and reading waits for the queue to drain (``SocketOptions/ReadBackpressure``).
        case notWritableReadsPaused
    }

    /// ``GCDAsyncSocket/beginReceiving(tag:)``'s continuous mode.
    enum Continuous: UInt8 {
        case off
        case on
        /// On, with ``SocketOptions/maxUndeliveredChunks`` chunks on the delegate queue: reading waits.
        case paused
    }

    /// How bytes cross to the kernel: as they are, or through TLS. `receive`, `send` and the interest switch
    /// on it; `startTLS` is its one transition (``beginTLSIfBothQueuesReady()``).
    enum Transport {
        case plain
        /// `startTLS`'s markers are in both queues: reads and writes stop at them, and nothing behind them
        /// goes out in plaintext.
        case tlsQueued
        case tls(TLSConnection)
    }

    /// What epoll and the last system calls said: independent facts.
    struct Readiness: OptionSet {
        let rawValue: UInt8
        /// Readable (or EOF/error) and not all read yet.
        static let readable = Readiness(rawValue: 1 << 0)
        /// The last send hit EAGAIN: wait for EPOLLOUT.
        static let writeBlocked = Readiness(rawValue: 1 << 1)
        /// EPOLLRDHUP or EPOLLHUP: the peer will send nothing more once its data is read.
        static let peerHungUp = Readiness(rawValue: 1 << 2)
        /// EPOLLIN fired while no read was queued: left out of the interest until a read is queued.
        static let idleWake = Readiness(rawValue: 1 << 3)
    }

    /// A timeout question out on the delegate queue: that direction waits for the answer.
    struct TimeoutQuestions: OptionSet {
        let rawValue: UInt8
        static let read = TimeoutQuestions(rawValue: 1 << 0)
        static let write = TimeoutQuestions(rawValue: 1 << 1)
    }

    /// What the connection is, fixed when it starts (and `timedOps`, which only ever turns on).
    struct Traits: OptionSet {
        let rawValue: UInt8
        /// Connected to a Unix-domain socket.
        static let unix = Traits(rawValue: 1 << 0)
        /// Created by `accept` (``SocketOptions/ReadBackpressure/acceptedSockets`` applies).
        static let accepted = Traits(rawValue: 1 << 1)
        /// An operation with a timeout was queued: timers need looking after.
        static let timedOps = Traits(rawValue: 1 << 2)
    }
}
