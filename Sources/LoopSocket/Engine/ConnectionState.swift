import EpollLoop

// The connection engine's state: one value, ``ConnectionState``, whose cases carry what exists only in them
// (a listener has no read or write side; a connecting, starting or open connection has a ``Stream``), changed
// only through its transitions (ConnectionState+Transitions.swift); the TLS phase is one of the stream's
// fields, so `startTLS`, the handshake and trust are transitions too, and the published ``ConnectionEngine/Status``
// is derived from the state. Beside it, bit sets of truly independent facts (pump scheduling, what epoll last
// said, timeout questions out, traits fixed at the start), and the TLS layer's object, which exists exactly
// while the phase says a session runs.
//
// All of it is confined to the socket's loop. The state is four bytes (the phase, and the stream packed in 16
// bits); the bit sets are a byte each.

/// Where a connection is in its life, with what exists only there: idle and listening carry nothing; a
/// connection being made, starting or open (``Phase``) carries its ``Stream``. After a close it is `idle`
/// again and may connect or listen anew. The cases by name are ``ConnectionEngine/Lifecycle``, which the
/// architecture diagram draws.
///
/// One payload case, not three: the phase's spare values then encode `idle` and `listening`, so telling the
/// case is one byte compare and the stream's fields are read in place, as cheaply as the separate one-byte
/// fields this replaced were (three payload cases cost the echo path about 180 instructions per round trip
/// in case tests and copies; callgrind, `instructions-per-roundtrip.sh echo-server`).
enum ConnectionState: Equatable {
    case idle
    /// Accepting on one or more listening descriptors.
    case listening
    /// Being made, starting or open, with its stream.
    case active(Phase, Stream)

    /// The phases of a connection that has a stream.
    enum Phase: UInt8 {
        /// Resolving and connecting (Happy Eyeballs attempts run in `DialState`). Reads, writes and a
        /// `disconnectAfter…` may be queued.
        case connecting
        /// An accepted descriptor set up but not yet registered with the loop: `didAcceptNewSocket` runs
        /// first. Reads and writes may be queued; nothing is delivered.
        case starting
        /// Connected: the pump moves bytes.
        case open
    }

    typealias Lifecycle = ConnectionEngine.Lifecycle
    typealias ReadSide = ConnectionEngine.ReadSide
    typealias WriteSide = ConnectionEngine.WriteSide
    typealias Ending = ConnectionEngine.Ending
    typealias Writability = ConnectionEngine.Writability
    typealias Continuous = ConnectionEngine.Continuous
    typealias TLSPhase = ConnectionEngine.TLSPhase

    /// The two directions of a connection that is being made or is open, and how it is to end.
    ///
    /// Packed into 16 bits, not stored as the five enums: a `UInt16` has no spare values, so the layout
    /// takes the spare values of ``Phase`` for `idle` and `listening`, the case is the phase byte alone, and
    /// the whole state is four bytes the engine reads with one load. With the enums stored, `continuous`
    /// (two cases, the most spare values) lent its byte instead, and every test of the case read and
    /// combined all six bytes (about 250 instructions per echo round trip; callgrind,
    /// `instructions-per-roundtrip.sh echo-server`).
    struct Stream: Equatable {
        private var bits: UInt16 = 0

        // Each field at its offset (bits 0-1, 2-3, 4-6, 7-8, 9, 10-12); a fresh stream is all zeros, every
        // field's first case.
        @inline(__always) var readSide: ReadSide { get { self[0, 0b11] ?? .open } set { self[0, 0b11] = newValue } }
        @inline(__always) var writeSide: WriteSide { get { self[2, 0b11] ?? .open } set { self[2, 0b11] = newValue } }
        @inline(__always) var ending: Ending { get { self[4, 0b111] ?? .none } set { self[4, 0b111] = newValue } }
        @inline(__always) var writability: Writability { get { self[7, 0b11] ?? .writable } set { self[7, 0b11] = newValue } }
        @inline(__always) var continuous: Continuous { get { self[9, 0b1] ?? .off } set { self[9, 0b1] = newValue } }
        @inline(__always) var tls: TLSPhase { get { self[10, 0b111] ?? .plain } set { self[10, 0b111] = newValue } }

        /// Whether the TLS phase is `phase`: one compare of the packed bits, no enum made (the plaintext
        /// read and write loops ask it on every pass).
        @inline(__always) func tlsIs(_ phase: TLSPhase) -> Bool { bits & (0b111 &<< 10) == UInt16(phase.rawValue) &<< 10 }

        /// The field `mask` wide at bit `shift`, as the enum whose raw value it holds.
        @inline(__always)
        private subscript<Field: RawRepresentable<UInt8>>(shift: Int, mask: UInt16) -> Field? {
            get { Field(rawValue: UInt8(truncatingIfNeeded: (bits &>> shift) & mask)) }
            set { bits = bits & ~(mask &<< shift) | (UInt16(newValue?.rawValue ?? 0) & mask) &<< shift }
        }
    }

    static func connecting(_ stream: Stream) -> ConnectionState { .active(.connecting, stream) }
    static func starting(_ stream: Stream) -> ConnectionState { .active(.starting, stream) }
    static func open(_ stream: Stream) -> ConnectionState { .active(.open, stream) }

    /// The case, without what it carries.
    @inline(__always) var lifecycle: Lifecycle {
        switch self {
        case .idle: .idle
        case .listening: .listening
        case .active(.connecting, _): .connecting
        case .active(.starting, _): .starting
        case .active(.open, _): .open
        }
    }

    /// The stream, if the connection has one (connecting, starting or open).
    @inline(__always) var stream: Stream? {
        if case .active(_, let stream) = self { return stream }
        return nil
    }

    /// What the getters report for this state (``ConnectionEngine/Status``): derived, never set on its own.
    var status: ConnectionEngine.Status {
        switch self {
        case .idle: .idle
        case .listening: .accepting
        case .active(.connecting, _): .connecting
        // An adopted descriptor is connected from the start: the getters say so while it registers.
        case .active(.starting, _), .active(.open, _): .connected
        }
    }

    /// The state `start` (a connect, a listen, an adoption, asked of an idle socket from any thread) makes
    /// of an idle one: what a claim publishes before the loop handles the event itself.
    static func claimed(by start: Event) -> ConnectionState {
        var state = ConnectionState.idle
        return state.handle(start) == .proceed ? state : .idle
    }
}

extension ConnectionEngine {
    /// ``ConnectionState``'s cases by name (what the pump and the guards test).
    enum Lifecycle: UInt8, CaseIterable {
        case idle
        case connecting
        case listening
        case starting
        case open
    }

    /// The status the getters report, published under the lock (``SharedState/status``): derived from the
    /// state (``ConnectionState/status``), or from the state a claim is about to make.
    enum Status: Equatable {
        case idle
        case connecting
        case accepting
        case connected
    }

    /// The receiving direction.
    enum ReadSide: UInt8, CaseIterable {
        case open
        /// `recv` returned 0 (or TLS's close_notify came): the peer will send nothing more.
        case peerFinished
        /// The end was delivered (`socketDidCloseReadStream`); reads that cannot complete fail.
        case endDelivered
    }

    /// The sending direction.
    enum WriteSide: UInt8, CaseIterable {
        case open
        /// `closeWriteStream()`: shut down once the queued writes are written; new writes are refused.
        case shutdownAfterWrites
        /// `shutdown(SHUT_WR)` done (after TLS's close_notify, over TLS).
        case shutDown
    }

    /// How an open connection is to end, other than at once. Anything but `.none` refuses new reads and
    /// writes (GCDAsyncSocket's rule after a `disconnectAfter…`).
    enum Ending: UInt8, CaseIterable {
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
    enum Writability: UInt8, CaseIterable {
        case writable
        case notWritable
        /// Not writable, and reading waits for the queue to drain (``SocketOptions/ReadBackpressure``).
        case notWritableReadsPaused
    }

    /// `beginReceiving(tag:)`'s continuous mode. Whether it is paused, its chunks on the delegate queue at
    /// ``SocketOptions/maxUndeliveredChunks``, is a fact of the thread that delivers them, kept under the lock
    /// only (``SharedState/continuousPaused``).
    enum Continuous: UInt8, CaseIterable {
        case off
        case on
    }

    /// How bytes cross to the kernel, and where TLS is in its life: the stream's field, changed by the
    /// TLS events (`tlsAsked`, `tlsMarkersReached`, `trustAsked`, `handshakeDone`, `trustAnswered`; a close
    /// ends it). While it is `handshaking`, `awaitingTrust` or `established` the engine holds the session's
    /// ``TLSConnection`` (``ConnectionEngine/tlsLayer``), made and dropped by the actions of those events.
    enum TLSPhase: UInt8, CaseIterable {
        /// No TLS: bytes go as they are.
        case plain
        /// `startTLS`'s markers are in both queues: reads and writes stop at them, and nothing behind them
        /// goes out in plaintext.
        case queued
        /// The handshake runs: bytes in and out are handshake messages; queued reads and writes wait.
        case handshaking
        /// The sink is deciding whether to trust the peer: nothing moves until it answers.
        case awaitingTrust
        /// Application data flows through the session.
        case established
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
        /// The descriptor is the only one referring to its socket: made by the library (`accept4`, `socket`,
        /// close-on-exec) and never handed out (``GCDAsyncSocket/socketFD()``), so its close alone takes it
        /// out of the epoll set.
        static let soleReference = Traits(rawValue: 1 << 3)
    }
}
