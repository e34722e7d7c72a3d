import CEpollShim
import Glibc

/// Datagram calls, through the same seam: `EINTR` retried, `EAGAIN` as a value, the rest thrown typed.
extension Syscall {
    /// `recvmmsg(2)` of up to `count` datagrams, without waiting; the number received.
    ///
    /// Each message's `msg_len` is set to its length and its `msg_hdr.msg_flags` may carry `MSG_TRUNC`.
    package static func receiveMessages(
        _ fd: Int32, _ messages: UnsafeMutablePointer<cepoll_mmsghdr>, count: Int
    ) throws(SyscallError) -> IOResult<Int> {
        try nonblocking(.recvmmsg, fd: fd) {
            Int(cepoll_recvmmsg(fd, messages, UInt32(count), CEPOLL_MSG_DONTWAIT))
        }
    }

    /// `sendmmsg(2)` of up to `count` datagrams with `MSG_NOSIGNAL`; the number the kernel took (at least 1).
    ///
    /// When the first datagram fails the call throws its error; a later one failing only shortens the count.
    package static func sendMessages(
        _ fd: Int32, _ messages: UnsafeMutablePointer<cepoll_mmsghdr>, count: Int
    ) throws(SyscallError) -> IOResult<Int> {
        try nonblocking(.sendmmsg, fd: fd) {
            Int(cepoll_sendmmsg(fd, messages, UInt32(count), CEPOLL_MSG_DONTWAIT))
        }
    }

    /// `setsockopt(2)` with a value of any layout (`ip_mreq`, `ipv6_mreq`, `in_addr`).
    package static func setOption<Value>(_ fd: Int32, level: Int32, name: Int32, _ value: Value) throws(SyscallError) {
        _ = try call(.setsockopt, fd: fd) {
            withUnsafeBytes(of: value) { raw in Glibc.setsockopt(fd, level, name, raw.baseAddress, socklen_t(raw.count)) }
        }
    }
}
