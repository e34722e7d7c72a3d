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
    /// A hard cap on bytes queued for writing: a write that would exceed it fails with `didFailToWriteDataWithTag`
    /// instead of growing memory without bound. nil (the default) means no cap, as GCDAsyncSocket.
    public var maxQueuedWriteBytes: Int?

    /// The defaults.
    public init() {}

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
