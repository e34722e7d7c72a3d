import EpollLoop
import FoundationEssentials

/// Everything a connection tells its sink (``ConnectionEngine/sinkReport(_:)``) but the two hot events, a
/// read and a write, which have sink methods of their own: the one route of the rest, as ``DatagramEvent``
/// is the UDP engine's. Questions (a timeout, trust) carry the answer's way back.
enum ConnectionReport {
    /// Connected to `host` (the address it connected to) and `port`.
    case connected(host: String, port: UInt16)
    /// Connected to the Unix-domain socket at `url`.
    case connectedToURL(URL)
    /// A listener accepted descriptor `fd` (``ConnectionEngine/Accepted``): the sink makes its connection,
    /// tells its own side, and then starts it.
    case accepted(ConnectionEngine.Accepted)
    /// A listening descriptor's `accept` failed (the listener goes on).
    case acceptFailed(ConnectionError)
    /// Bytes arrived for the read at the front without completing it (`length`: its bytes so far).
    case readProgress(length: Int, tag: Int)
    /// A chunk of `beginReceiving(tag:)`'s continuous reads (its tag: ``ConnectionEngine/continuousChunkTag``
    /// inline, ``ConnectionEngine/dispatchContinuousChunk()`` on a queue).
    case continuousChunk(Data)
    /// A read failed; the connection goes on.
    case readFailed(tag: Int, error: ConnectionError)
    /// The peer finished its stream (`autoDisconnectOnClosedReadStream` off).
    case readStreamClosed
    /// Part of the write at the front went out (`length`: its bytes so far).
    case writeProgress(length: Int, tag: Int)
    /// A write failed, or was dropped by a close.
    case writeFailed(tag: Int, error: ConnectionError)
    /// The write queue crossed a water mark.
    case writabilityChanged(Bool)
    /// The operation at the front of a direction ran out of time: extend it? The sink answers through
    /// `answer` (``TimeoutAnswer``), now or later.
    case timeoutAsked(ConnectionEngine.Direction, tag: Int, elapsed: TimeInterval, done: Int, answer: TimeoutAnswer)
    /// Trust the peer's certificate chain? `decide` may be called from any thread, once; a sink with
    /// nobody to ask calls it with false.
    case trustAsked(TLSTrust, decide: @Sendable (Bool) -> Void)
    /// The TLS handshake completed.
    case secured
    /// A close dropped queued writes (before their `writeFailed` reports): `error` is the close's.
    case writesDropped(ConnectionError?)
    /// The connection ended: once per connection, after everything else it had to say.
    case disconnected(ConnectionError?)
}

extension ConnectionEngine {
    /// A descriptor a listener accepted, for the sink (``ConnectionReport/accepted(_:)``): make its
    /// connection on `loop`, with the sink it will have for life, set it up
    /// (``ConnectionEngine/setUpAccepted(_:fd:isUnix:)``), tell the sink's owner, and then start it
    /// (``ConnectionEngine/startAdopted()``), so that nothing of the new connection comes before its accept.
    struct Accepted {
        let fd: Int32
        let isUnix: Bool
        let loop: EventLoop

        /// The peer's address, asked of the kernel (`getpeername`): only a delegate's queue chooser wants it.
        var peer: SocketAddress? { SocketAddress.of(fd: fd, peer: true) }
    }
}

/// The way back of a ``ConnectionReport/timeoutAsked(_:tag:elapsed:done:answer:)``: a sink that answers
/// during the report sets ``now`` (on the loop); one that answers later clears it and calls ``later`` once,
/// from any thread. A sink that does neither gives no more time (``now`` starts at 0).
final class TimeoutAnswer: @unchecked Sendable {
    /// The extension in seconds (0: none), given during the report; nil once the sink answers ``later``.
    /// Loop only.
    var now: TimeInterval? = 0
    /// Takes the answer on the loop.
    let later: @Sendable (TimeInterval) -> Void

    init(later: @escaping @Sendable (TimeInterval) -> Void) {
        self.later = later
    }
}
