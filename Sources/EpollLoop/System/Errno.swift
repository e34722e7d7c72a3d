import CEpollShim
import Glibc

/// A POSIX error number with readable Swift names, in the manner of swift-system's `Errno`.
///
/// ```swift
/// catch let error as SyscallError where error.errno == .tooManyOpenFiles { ... }
/// ```
public struct Errno: RawRepresentable, Hashable, Sendable, Error, CustomStringConvertible {
    /// The raw `errno` value.
    public let rawValue: Int32

    /// Wraps a raw `errno` value.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's current `errno`.
    @inline(__always)
    static var current: Errno { Errno(rawValue: cepoll_errno()) }

    /// `strerror`'s text for this error, with its symbolic name.
    public var description: String {
        let text = String(cString: strerror(rawValue))
        return "\(text) (errno \(rawValue))"
    }

    /// `EINTR`: the call was interrupted by a signal (retried by the syscall seam, never surfaced).
    public static let interrupted = Errno(rawValue: EINTR)
    /// `EAGAIN`/`EWOULDBLOCK`: a nonblocking call would block (surfaced as a value, never thrown).
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    /// `EBADF`: the descriptor is not open.
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    /// `EMFILE`: the process's descriptor table is full.
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    /// `ENFILE`: the system's descriptor table is full.
    public static let tooManyOpenFilesInSystem = Errno(rawValue: ENFILE)
    /// `ENOBUFS`: the kernel is out of buffer space.
    public static let noBufferSpace = Errno(rawValue: ENOBUFS)
    /// `ENOMEM`: the kernel is out of memory.
    public static let noMemory = Errno(rawValue: ENOMEM)
    /// `EINVAL`: an argument is invalid.
    public static let invalidArgument = Errno(rawValue: EINVAL)
    /// `EEXIST`: the descriptor is already registered.
    public static let fileExists = Errno(rawValue: EEXIST)
    /// `ENOENT`: no such file, or the descriptor is not registered.
    public static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// `EINPROGRESS`: a nonblocking connect has started.
    public static let nowInProgress = Errno(rawValue: EINPROGRESS)
    /// `ECONNREFUSED`: nothing listens at the address.
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    /// `ECONNRESET`: the peer reset the connection.
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    /// `ECONNABORTED`: a pending connection was aborted before accept.
    public static let connectionAborted = Errno(rawValue: ECONNABORTED)
    /// `EPIPE`: the peer closed its read side.
    public static let brokenPipe = Errno(rawValue: EPIPE)
    /// `ETIMEDOUT`: the connection timed out.
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    /// `EADDRINUSE`: the address is already bound.
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    /// `EADDRNOTAVAIL`: the address is not available (often: ephemeral ports exhausted).
    public static let addressNotAvailable = Errno(rawValue: EADDRNOTAVAIL)
    /// `ENOTCONN`: the socket is not connected.
    public static let notConnected = Errno(rawValue: ENOTCONN)
    /// `EHOSTUNREACH`: no route to the host.
    public static let hostUnreachable = Errno(rawValue: EHOSTUNREACH)
    /// `ENETUNREACH`: no route to the network.
    public static let networkUnreachable = Errno(rawValue: ENETUNREACH)
    /// `EAFNOSUPPORT`: the address family is not supported (for example IPv6 disabled).
    public static let addressFamilyNotSupported = Errno(rawValue: EAFNOSUPPORT)
}
