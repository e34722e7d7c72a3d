import CEpollShim
import Glibc

/// The one seam every libc call goes through.
///
/// `EINTR` is retried here and nowhere else; `EAGAIN`/`EWOULDBLOCK` become ``IOResult/wouldBlock`` in the
/// nonblocking variants; every other failure is thrown as a ``SyscallError`` naming the call. In debug builds
/// tests make calls fail through `FaultInjection` without a failing kernel; release builds have no such hook.
package enum Syscall {
    /// Runs `body` (a call returning -1 and setting errno on failure), retrying `EINTR`.
    @inline(__always)
    package static func call<R: FixedWidthInteger>(
        _ call: SystemCall, fd: Int32 = -1, _ body: () -> R
    ) throws(SyscallError) -> R {
        while true {
            #if DEBUG
            if let injected = FaultInjection.failure(for: call, fd: fd) {
                if injected == .interrupted { continue }
                throw SyscallError(call, errno: injected)
            }
            #endif
            let result = body()
            if result != -1 { return result }
            let errno = Errno.current
            if errno == .interrupted { continue }
            throw SyscallError(call, errno: errno)
        }
    }

    /// Like ``call(_:fd:_:)``, but `EAGAIN`/`EWOULDBLOCK` is returned as ``IOResult/wouldBlock``.
    @inline(__always)
    package static func nonblocking<R: FixedWidthInteger & Sendable>(
        _ call: SystemCall, fd: Int32, _ body: () -> R
    ) throws(SyscallError) -> IOResult<R> {
        do {
            return .processed(try Syscall.call(call, fd: fd, body))
        } catch {
            if error.errno.rawValue == EAGAIN || error.errno.rawValue == EWOULDBLOCK { return .wouldBlock }
            throw error
        }
    }

    // MARK: Descriptors

    /// `close(2)`. Never retried: on Linux the descriptor is gone even when `close` reports `EINTR`.
    package static func close(_ fd: Int32) throws(SyscallError) {
        #if DEBUG
        if let injected = FaultInjection.failure(closing: fd) {
            _ = Glibc.close(fd)
            if injected == .interrupted { return }  // as a real EINTR below: the descriptor is gone
            throw SyscallError(.close, errno: injected)
        }
        #endif
        if Glibc.close(fd) == -1 {
            let errno = Errno.current
            if errno == .interrupted { return }
            throw SyscallError(.close, errno: errno)
        }
    }

    /// `read(2)` on a nonblocking descriptor.
    package static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws(SyscallError) -> IOResult<Int> {
        try nonblocking(.read, fd: fd) { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// `write(2)` on a nonblocking descriptor.
    package static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SyscallError) -> IOResult<Int> {
        try nonblocking(.write, fd: fd) { Glibc.write(fd, buffer.baseAddress, buffer.count) }
    }

    /// `writev(2)` on a nonblocking descriptor.
    package static func writev(_ fd: Int32, _ iov: UnsafePointer<iovec>, count: Int32) throws(SyscallError) -> IOResult<Int> {
        try nonblocking(.writev, fd: fd) { Glibc.writev(fd, iov, count) }
    }

    /// `readv(2)` on a nonblocking descriptor.
    package static func readv(_ fd: Int32, _ iov: UnsafePointer<iovec>, count: Int32) throws(SyscallError) -> IOResult<Int> {
        try nonblocking(.readv, fd: fd) { Glibc.readv(fd, iov, count) }
    }

    /// `pipe2(O_NONBLOCK | O_CLOEXEC)`: returns (read end, write end).
    package static func pipe() throws(SyscallError) -> (Int32, Int32) {
        var fds: (Int32, Int32) = (-1, -1)
        _ = try call(.pipe) {
            withUnsafeMutableBytes(of: &fds) { raw in
                cepoll_pipe(raw.baseAddress!.assumingMemoryBound(to: Int32.self))
            }
        }
        return fds
    }

    // MARK: epoll and eventfd

    /// `epoll_create1(EPOLL_CLOEXEC)`.
    package static func epollCreate() throws(SyscallError) -> Int32 {
        try call(.epollCreate) { cepoll_create() }
    }

    /// `epoll_ctl(2)`.
    package static func epollCtl(_ epfd: Int32, _ op: Int32, _ fd: Int32, events: UInt32, data: UInt64) throws(SyscallError) {
        _ = try call(.epollCtl, fd: fd) { cepoll_ctl(epfd, op, fd, events, data) }
    }

    /// `epoll_wait(2)`; an interrupted wait returns 0 events rather than retrying with a stale timeout.
    package static func epollWait(
        _ epfd: Int32, _ events: UnsafeMutablePointer<epoll_event>, count: Int32, timeoutMilliseconds: Int32
    ) throws(SyscallError) -> Int32 {
        do {
            return try call(.epollWait, fd: epfd) { () -> Int32 in
                let n = cepoll_wait(epfd, events, count, timeoutMilliseconds)
                // A signal during the wait: report "no events" so the caller recomputes its timeout.
                if n == -1 && cepoll_errno() == EINTR { return 0 }
                return n
            }
        }
    }

    /// `eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)`.
    package static func eventfd() throws(SyscallError) -> Int32 {
        try call(.eventfd) { cepoll_eventfd() }
    }

    /// Adds one to an eventfd's counter. A full counter (`EAGAIN`) already means "readable", so it is not an error.
    package static func eventfdSignal(_ fd: Int32) throws(SyscallError) {
        var one: UInt64 = 1
        _ = try nonblocking(.eventfdWrite, fd: fd) { Glibc.write(fd, &one, 8) }
    }

    /// Resets an eventfd's counter; `EAGAIN` (already zero) is fine.
    package static func eventfdDrain(_ fd: Int32) throws(SyscallError) {
        var value: UInt64 = 0
        _ = try nonblocking(.eventfdRead, fd: fd) { Glibc.read(fd, &value, 8) }
    }
}
