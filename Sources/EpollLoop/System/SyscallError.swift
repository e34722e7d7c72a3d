/// The system calls made through the syscall seam, named so that errors and fault injection can say which.
///
/// Each case is the C function of the same name; its raw value is the function's exact name where the Swift
/// name differs (`epoll_create1`, `accept4`, `pipe2`, ...).
public enum SystemCall: String, Sendable, Hashable, CaseIterable {
    /// `close(2)`.
    case close
    /// `read(2)`.
    case read
    /// `readv(2)`.
    case readv
    /// `write(2)`.
    case write
    /// `writev(2)`.
    case writev
    /// `send(2)`.
    case send
    /// `recv(2)`.
    case recv
    /// `epoll_create1(2)`.
    case epollCreate = "epoll_create1"
    /// `epoll_ctl(2)`.
    case epollCtl = "epoll_ctl"
    /// `epoll_wait(2)`.
    case epollWait = "epoll_wait"
    /// `eventfd(2)`.
    case eventfd
    /// `eventfd_read(3)`.
    case eventfdRead = "eventfd_read"
    /// `eventfd_write(3)`.
    case eventfdWrite = "eventfd_write"
    /// `socket(2)`.
    case socket
    /// `bind(2)`.
    case bind
    /// `listen(2)`.
    case listen
    /// `accept4(2)`.
    case accept = "accept4"
    /// `connect(2)`.
    case connect
    /// `shutdown(2)`.
    case shutdown
    /// `getsockopt(2)`.
    case getsockopt
    /// `setsockopt(2)`.
    case setsockopt
    /// `getsockname(2)`.
    case getsockname
    /// `getpeername(2)`.
    case getpeername
    /// `fcntl(2)`.
    case fcntl
    /// `pipe2(2)`.
    case pipe = "pipe2"
    /// `open(2)`.
    case open
    /// `dup(2)`.
    case dup
    /// `recvmmsg(2)`.
    case recvmmsg
    /// `sendmmsg(2)`.
    case sendmmsg
}

/// A system call failed: which call, and the `errno` it set.
///
/// Thrown by everything that goes through the syscall seam. `EINTR` never surfaces (it is retried) and
/// `EAGAIN` never surfaces either (it is returned as ``IOResult/wouldBlock``).
public struct SyscallError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The failing call.
    public let call: SystemCall
    /// The error it reported.
    public let errno: Errno

    /// Creates an error for `call` failing with `errno`.
    public init(_ call: SystemCall, errno: Errno) {
        self.call = call
        self.errno = errno
    }

    /// `"<call> failed: <strerror> (errno N)"`.
    public var description: String { "\(call.rawValue) failed: \(errno)" }
}

/// The outcome of a nonblocking call: it either did its work or would have blocked.
public enum IOResult<Value>: Sendable where Value: Sendable {
    /// The call completed with this value.
    case processed(Value)
    /// The call returned `EAGAIN`/`EWOULDBLOCK`: nothing was done; wait for readiness.
    case wouldBlock
}

extension IOResult: Equatable where Value: Equatable {}
