import CEpollShim

/// What a loop's sockets did, by kind: part of ``LoopMetrics`` (``LoopMetrics/sockets``).
///
/// `stream` counts TCP and Unix-domain stream connections (TLS ones included: their bytes are counted on
/// the wire, as ciphertext); `datagram` counts UDP sockets. Everything only grows but the open counts,
/// which are gauges.
///
/// ```swift
/// let before = group.metrics.sockets
/// // ... some time later
/// let window = group.metrics.sockets.since(before)
/// print(window.stream.accepted, window.stream.bytesReceived)
/// ```
public struct SocketCounts: Sendable, Equatable {
    /// One kind's counts.
    public struct Kind: Sendable, Equatable {
        /// Connections (or, for datagrams, sockets) open on the loop now: a gauge.
        public var open: Int = 0
        /// Accepted connections that run on this loop (a listener spreads them over its group; streams only).
        public var accepted: UInt64 = 0
        /// Connections this loop's sockets connected (streams), or sockets bound (datagrams).
        public var started: UInt64 = 0
        /// Bytes `recv` (or `recvmmsg`) returned.
        public var bytesReceived: UInt64 = 0
        /// Bytes the kernel took in `send`/`sendmsg` (or `sendmmsg`).
        public var bytesSent: UInt64 = 0
        /// Datagrams received (datagrams only).
        public var datagramsReceived: UInt64 = 0
        /// Datagrams sent (datagrams only).
        public var datagramsSent: UInt64 = 0

        /// An empty count.
        public init() {}

        /// These counts less `earlier`'s; ``open`` stays this count's.
        func since(_ earlier: Kind) -> Kind {
            var result = self
            result.accepted = accepted &- earlier.accepted
            result.started = started &- earlier.started
            result.bytesReceived = bytesReceived &- earlier.bytesReceived
            result.bytesSent = bytesSent &- earlier.bytesSent
            result.datagramsReceived = datagramsReceived &- earlier.datagramsReceived
            result.datagramsSent = datagramsSent &- earlier.datagramsSent
            return result
        }

        /// Adds `other` (another loop's count), ``open`` included.
        mutating func add(_ other: Kind) {
            open += other.open
            accepted &+= other.accepted
            started &+= other.started
            bytesReceived &+= other.bytesReceived
            bytesSent &+= other.bytesSent
            datagramsReceived &+= other.datagramsReceived
            datagramsSent &+= other.datagramsSent
        }
    }

    /// TCP and Unix-domain stream connections.
    public var stream = Kind()
    /// UDP sockets.
    public var datagram = Kind()
    /// TLS handshakes completed.
    public var tlsHandshakes: UInt64 = 0
    /// TLS handshakes that failed (bad certificates, protocol errors, timeouts, peers that left).
    public var tlsHandshakeFailures: UInt64 = 0

    /// Empty counts.
    public init() {}

    /// The counts from `earlier` to these; the open gauges stay these counts'.
    public func since(_ earlier: SocketCounts) -> SocketCounts {
        var result = self
        result.stream = stream.since(earlier.stream)
        result.datagram = datagram.since(earlier.datagram)
        result.tlsHandshakes = tlsHandshakes &- earlier.tlsHandshakes
        result.tlsHandshakeFailures = tlsHandshakeFailures &- earlier.tlsHandshakeFailures
        return result
    }

    /// Adds `other` (another loop's counts) to these, gauges included.
    mutating func add(_ other: SocketCounts) {
        stream.add(other.stream)
        datagram.add(other.datagram)
        tlsHandshakes &+= other.tlsHandshakes
        tlsHandshakeFailures &+= other.tlsHandshakeFailures
    }
}

/// Reads a loop's socket counters (`EventLoop.socketCounters`): slots of `UInt64` that only the loop's
/// thread writes, with `cepoll_counter_add` (a relaxed atomic load and store, inlined), and any thread reads.
/// Each counter is exact; they are not all read at the same instant.
enum SocketCounterSlots {
    static func read(_ slots: UnsafeMutablePointer<UInt64>) -> SocketCounts {
        func load(_ slot: Int32) -> UInt64 { cepoll_counter_load(slots, slot) }
        var counts = SocketCounts()
        // Closed before opened: a connection that opens and closes between the two loads then cannot make
        // the gauge go below zero.
        let streamClosed = load(Int32(CEPOLL_STREAM_CLOSED))
        counts.stream.open = Int(truncatingIfNeeded: load(Int32(CEPOLL_STREAM_OPENED)) &- streamClosed)
        counts.stream.accepted = load(Int32(CEPOLL_STREAM_ACCEPTED))
        counts.stream.started = load(Int32(CEPOLL_STREAM_CONNECTED))
        counts.stream.bytesReceived = load(Int32(CEPOLL_STREAM_BYTES_IN))
        counts.stream.bytesSent = load(Int32(CEPOLL_STREAM_BYTES_OUT))
        let datagramClosed = load(Int32(CEPOLL_DATAGRAM_CLOSED))
        let datagramOpened = load(Int32(CEPOLL_DATAGRAM_OPENED))
        counts.datagram.open = Int(truncatingIfNeeded: datagramOpened &- datagramClosed)
        counts.datagram.started = datagramOpened
        counts.datagram.datagramsReceived = load(Int32(CEPOLL_DATAGRAMS_IN))
        counts.datagram.datagramsSent = load(Int32(CEPOLL_DATAGRAMS_OUT))
        counts.datagram.bytesReceived = load(Int32(CEPOLL_DATAGRAM_BYTES_IN))
        counts.datagram.bytesSent = load(Int32(CEPOLL_DATAGRAM_BYTES_OUT))
        counts.tlsHandshakes = load(Int32(CEPOLL_TLS_HANDSHAKES))
        counts.tlsHandshakeFailures = load(Int32(CEPOLL_TLS_FAILURES))
        return counts
    }
}
