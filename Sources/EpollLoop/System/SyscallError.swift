/// The system calls made through the syscall seam, named so that errors and fault injection can say which.
public enum SystemCall: String, Sendable, Hashable, CaseIterable {
    case close, read, readv, write, writev, send, recv
    case epollCreate = "epoll_create1", epollCtl = "epoll_ctl", epollWait = "epoll_wait"
    case eventfd, eventfdRead = "eventfd_read", eventfdWrite = "eventfd_write"
    case socket, bind, listen, accept = "accept4", connect, shutdown
    case getsockopt, setsockopt, getsockname, getpeername
    case fcntl, pipe = "pipe2", open, dup
    case recvmmsg, sendmmsg
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
