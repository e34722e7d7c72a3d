import CEpollShim
import Glibc

/// Socket calls, through the same seam: `EINTR` retried, `EAGAIN` as a value, the rest thrown typed.
extension Syscall {
    /// `socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)`.
    package static func socket(domain: Int32, type: Int32 = CEPOLL_SOCK_STREAM) throws(SyscallError) -> Int32 {
        try call(.socket) { cepoll_socket(domain, type, 0) }
    }

    /// `bind(2)`.
    package static func bind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) throws(SyscallError) {
        _ = try call(.bind, fd: fd) { Glibc.bind(fd, address, length) }
    }

    /// `listen(2)`.
    package static func listen(_ fd: Int32, backlog: Int32) throws(SyscallError) {
        _ = try call(.listen, fd: fd) { Glibc.listen(fd, backlog) }
    }

    /// `accept4(SOCK_NONBLOCK | SOCK_CLOEXEC)`; `.wouldBlock` when no connection is pending.
    package static func accept(
        _ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: UnsafeMutablePointer<socklen_t>?
    ) throws(SyscallError) -> IOResult<Int32> {
        try nonblocking(.accept, fd: fd) { cepoll_accept(fd, address, length) }
    }

    /// A nonblocking `connect(2)`: `true` when connected at once, `false` when in progress (`EINPROGRESS`).
    package static func connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) throws(SyscallError) -> Bool {
        do {
            _ = try call(.connect, fd: fd) { Glibc.connect(fd, address, length) }
            return true
        } catch {
            if error.errno == .nowInProgress { return false }
            throw error
        }
    }

    /// `shutdown(2)`.
    package static func shutdown(_ fd: Int32, how: Int32) throws(SyscallError) {
        _ = try call(.shutdown, fd: fd) { Glibc.shutdown(fd, how) }
    }

    /// `send(2)` with `MSG_NOSIGNAL`: never raises SIGPIPE.
    package static func send(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SyscallError) -> IOResult<Int> {
        try nonblocking(.send, fd: fd) { cepoll_send(fd, buffer.baseAddress, buffer.count, CEPOLL_MSG_NOSIGNAL) }
    }

    /// `sendmsg(2)` of an iovec array with `MSG_NOSIGNAL`: gathered writes that never raise SIGPIPE.
    package static func sendv(_ fd: Int32, _ iov: UnsafeMutablePointer<iovec>, count: Int) throws(SyscallError) -> IOResult<Int> {
        try nonblocking(.writev, fd: fd) {
            var message = msghdr()
            message.msg_iov = iov
            message.msg_iovlen = count
            return cepoll_sendmsg(fd, &message, CEPOLL_MSG_NOSIGNAL)
        }
    }

    /// `recv(2)` into `buffer`; 0 means the peer closed its write side.
    package static func recv(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws(SyscallError) -> IOResult<Int> {
        try nonblocking(.recv, fd: fd) { cepoll_recv(fd, buffer.baseAddress, buffer.count, 0) }
    }

    /// `setsockopt(2)` with an `Int32` value.
    package static func setOption(_ fd: Int32, level: Int32, name: Int32, value: Int32) throws(SyscallError) {
        var value = value
        _ = try call(.setsockopt, fd: fd) {
            Glibc.setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// `getsockopt(2)` of an `Int32` value.
    package static func option(_ fd: Int32, level: Int32, name: Int32) throws(SyscallError) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try call(.getsockopt, fd: fd) { Glibc.getsockopt(fd, level, name, &value, &length) }
        return value
    }

    /// `getsockname(2)`.
    package static func localAddress(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>) throws(SyscallError) {
        _ = try call(.getsockname, fd: fd) { Glibc.getsockname(fd, address, length) }
    }

    /// `getpeername(2)`.
    package static func peerAddress(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>) throws(SyscallError) {
        _ = try call(.getpeername, fd: fd) { Glibc.getpeername(fd, address, length) }
    }

    /// `open("/dev/null", O_RDONLY | O_CLOEXEC)`: the reserve descriptor kept for `EMFILE` on accept.
    package static func openDevNull() throws(SyscallError) -> Int32 {
        try call(.open) { Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC) }
    }
}
