import EpollLoop
import FoundationEssentials

/// The error a ``GCDAsyncUdpSocket`` reports, with the codes of GCDAsyncUdpSocket's `GCDAsyncUdpSocketError`.
///
/// Matches as the Objective-C error enum does when Swift imports it:
///
/// ```swift
/// func udpSocket(_ sock: GCDAsyncUdpSocket, didNotSendDataWithTag tag: Int, dueToError error: Error?) {
///     if let error = error as? GCDAsyncUdpSocketError, error.code == .sendTimeoutError { ... }
/// }
/// do { try sock.bind(toPort: 53) } catch GCDAsyncUdpSocketError.badConfigError { ... }
/// ```
///
/// Failures of system calls keep their `errno` (``errno``) and the call that failed (``syscall``); their code
/// is ``Code/otherError``.
public struct GCDAsyncUdpSocketError: Error, Hashable, Sendable, CustomStringConvertible, ErrorFacade {
    /// The error codes of GCDAsyncUdpSocket, in its order and with its raw values.
    public enum Code: Int, Hashable, Sendable {
        /// Never used.
        case noError = 0
        /// Invalid configuration: bound or connected twice, not bound, both IP families disabled, the loop
        /// shut down, a destination given to a connected socket or none to an unconnected one.
        case badConfigError
        /// Invalid parameter: an unknown host, interface or group, a malformed address, a datagram larger
        /// than ``GCDAsyncUdpSocket/maxSendBufferSize()``.
        case badParamError
        /// A send waited longer than its timeout for room in the socket buffer.
        case sendTimeoutError
        /// The socket was closed before the operation could complete.
        case closedError
        /// Anything else, including failed system calls (see ``GCDAsyncUdpSocketError/errno``).
        case otherError
    }

    /// The code, message, `errno`, call and user info, shared in form and logic with the other error types.
    let core: ErrorCore<Code>

    /// What kind of error this is.
    public var code: Code { core.code }
    /// The `errno` of a failed system call, if that is what happened.
    public var errno: Errno? { core.errno }
    /// The failed system call, if any.
    public var syscall: SystemCall? { core.syscall }
    /// A sentence for people; a failed system call's is made only when asked for.
    public var message: String { core.message }

    /// An error with a code and a message.
    public init(_ code: Code, _ message: String) {
        core = ErrorCore(code, message: message)
    }

    /// An error for a failed system call.
    public init(_ error: SyscallError, code: Code = .otherError) {
        core = ErrorCore(error, code: code)
    }

    /// An error with a code, a message and the `errno` behind it.
    init(_ code: Code, _ message: String, errno: Errno) {
        core = ErrorCore(code, message: message, errno: errno)
    }

    /// A loop's refusal as this type: a failed `epoll_ctl` (`EventLoopError.system`) keeps its `errno` and
    /// call, so that callers can tell `ENOMEM` from `EBADF` without parsing a sentence; any other refusal is
    /// ``Code/otherError`` with its description.
    init(_ error: EventLoopError) {
        if case .system(let failure) = error {
            self.init(failure)
        } else {
            self.init(.otherError, error.description)
        }
    }

    /// GCDAsyncUdpSocket's description (the same as ``message``).
    public var localizedDescription: String { message }

    /// ``Code/noError``.
    public static var noError: Code { .noError }
    /// ``Code/badConfigError``.
    public static var badConfigError: Code { .badConfigError }
    /// ``Code/badParamError``.
    public static var badParamError: Code { .badParamError }
    /// ``Code/sendTimeoutError``.
    public static var sendTimeoutError: Code { .sendTimeoutError }
    /// ``Code/closedError``.
    public static var closedError: Code { .closedError }
    /// ``Code/otherError``.
    public static var otherError: Code { .otherError }

    static let sendTimeout = GCDAsyncUdpSocketError(.sendTimeoutError, "Send operation timed out")
    static let closed = GCDAsyncUdpSocketError(.closedError, "Socket closed")
    static let loopShutDown = GCDAsyncUdpSocketError(.badConfigError, "The socket's event loop is shut down")
}

/// `err.localizedDescription` on an `Error` is the message, as with GCDAsyncUdpSocket's `NSError`s.
extension GCDAsyncUdpSocketError: LocalizedError {}

/// Matches an error against a ``GCDAsyncUdpSocketError/Code``: `catch GCDAsyncUdpSocketError.badConfigError`.
public func ~= (code: GCDAsyncUdpSocketError.Code, error: any Error) -> Bool {
    (error as? GCDAsyncUdpSocketError)?.code == code
}
