import EpollLoop
import Glibc

/// Socket options applied before `bind`/`connect` (GCDAsyncSocket could set them only afterwards, through
/// `performBlock`). Set ``GCDAsyncSocket/options`` before calling `connect` or `accept`; accepted sockets
/// inherit their listener's options.
///
/// ```swift
/// sock.options.noDelay = true
/// sock.options.keepAlive = .init(idle: 30, interval: 5, count: 4)
/// ```
public struct SocketOptions: Hashable, Sendable {
    /// TCP keepalive probing: detects peers that vanished without a FIN or RST.
    public struct KeepAlive: Hashable, Sendable {
        /// Seconds of idleness before the first probe (`TCP_KEEPIDLE`).
        public var idle: Int32
        /// Seconds between probes (`TCP_KEEPINTVL`).
        public var interval: Int32
        /// Unanswered probes before the connection is dropped (`TCP_KEEPCNT`).
        public var count: Int32

        /// Keepalive settings; the connection is dropped after about `idle + interval * count` seconds of silence.
        public init(idle: Int32, interval: Int32, count: Int32) {
            self.idle = idle
            self.interval = interval
            self.count = count
        }
    }

    /// `TCP_NODELAY`: send small writes at once (no Nagle delay). Default true, as servers want.
    public var noDelay = true
    /// `SO_KEEPALIVE` with its timings; nil leaves keepalive off.
    public var keepAlive: KeepAlive?
    /// `SO_REUSEADDR` on listening sockets (default true, as GCDAsyncSocket).
    public var reuseAddress = true
    /// `SO_REUSEPORT` on listening sockets: several listeners (processes or loops) share one port.
    public var reusePort = false
    /// `SO_RCVBUF` in bytes; nil keeps the kernel's autotuning.
    public var receiveBufferSize: Int32?
    /// `SO_SNDBUF` in bytes; nil keeps the kernel's autotuning.
    public var sendBufferSize: Int32?
    /// The file mode of a listening Unix socket's file (for example `0o660`); nil keeps the umask's.
    public var unixSocketMode: UInt32?
    /// The `listen` backlog (GCDAsyncSocket hard-codes 1024).
    public var backlog: Int32 = 1024
    /// Bytes queued for writing above which the socket reports itself not writable.
    public var writeHighWaterMark = 1024 * 1024
    /// Bytes queued for writing below which the socket reports itself writable again.
    public var writeLowWaterMark = 256 * 1024
    /// Whether the socket stops reading while its writes back up (see ``ReadBackpressure``). The default
    /// pauses sockets created by `accept` and leaves sockets that connect reading.
    public var readBackpressure = ReadBackpressure.acceptedSockets
    /// The most `recv` calls (of up to 64 KiB each) a socket makes per readiness event before the loop
    /// serves its other descriptors, as SwiftNIO's `maxMessagesPerRead`: one peer that sends without pause
    /// delays the others on its loop by at most this many reads. Values below 1 count as 1, above 32,767 as 32,767.
    public var maxReadsPerWakeup = 4
    /// With a delegate queue, the most chunks of ``GCDAsyncSocket/beginReceiving(tag:)`` dispatched to it and
    /// not yet delivered (each up to 64 KiB). At the limit the socket stops reading until the delegate has
    /// taken half of them: the peer's bytes stay in the kernel and TCP pushes back, so a delegate slower
    /// than its peer holds at most this many chunks in memory. Values below 1 count as 1.
    public var maxUndeliveredChunks = 16
    /// A hard cap on bytes queued for writing: a write that would exceed it fails with `didFailToWriteDataWithTag`
    /// instead of growing memory without bound. nil (the default) means no cap, as GCDAsyncSocket.
    public var maxQueuedWriteBytes: Int?

    /// The defaults.
    public init() {}

    /// When a socket stops taking bytes from the kernel because its own writes back up.
    ///
    /// A socket whose queued writes rise above ``SocketOptions/writeHighWaterMark`` (the moment it reports
    /// `didChangeWritability(false)`) stops reading: EPOLLIN is dropped, queued reads wait, bytes already
    /// read are not delivered. Once the queue falls to ``SocketOptions/writeLowWaterMark`` reading resumes.
    /// The peer's unread bytes then stay in the kernel, its TCP window closes and it is pushed back, so a
    /// client that sends requests and never reads the replies cannot grow the server's memory beyond the
    /// high water mark plus one read's worth of replies. A reader whose own writes stay under the high
    /// water mark is never paused.
    ///
    /// Pausing is safe when the peer keeps reading while it writes; two peers that both pause while
    /// both have more than the high water mark queued would wait for each other. Hence the default: a
    /// server's accepted sockets pause, a client's connecting socket does not, so a full-duplex transfer
    /// between a paused server and any client completes.
    public enum ReadBackpressure: Hashable, Sendable {
        /// Sockets created by `accept` pause; sockets that connect (or adopt a descriptor) do not.
        case acceptedSockets
        /// Every socket pauses.
        case always
        /// No socket pauses: reads go on whatever is queued for writing (GCDAsyncSocket's behaviour).
        case never
    }

    /// Applies the options that matter for a connected (or connecting) stream socket.
    func applyToStream(_ fd: Int32, isUnix: Bool) throws(SyscallError) {
        if !isUnix && noDelay {
            try Syscall.setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
        }
        if let keepAlive, !isUnix {
            try Syscall.setOption(fd, level: SOL_SOCKET, name: SO_KEEPALIVE, value: 1)
            try Syscall.setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_KEEPIDLE, value: keepAlive.idle)
            try Syscall.setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_KEEPINTVL, value: keepAlive.interval)
            try Syscall.setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_KEEPCNT, value: keepAlive.count)
        }
        try applyBufferSizes(fd)
    }

    /// Applies the options of a listening socket (before `bind`).
    func applyToListener(_ fd: Int32, isUnix: Bool) throws(SyscallError) {
        if reuseAddress && !isUnix { try Syscall.setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, value: 1) }
        if reusePort && !isUnix { try Syscall.setOption(fd, level: SOL_SOCKET, name: SO_REUSEPORT, value: 1) }
        try applyBufferSizes(fd)
    }

    private func applyBufferSizes(_ fd: Int32) throws(SyscallError) {
        if let receiveBufferSize { try Syscall.setOption(fd, level: SOL_SOCKET, name: SO_RCVBUF, value: receiveBufferSize) }
        if let sendBufferSize { try Syscall.setOption(fd, level: SOL_SOCKET, name: SO_SNDBUF, value: sendBufferSize) }
    }
}
