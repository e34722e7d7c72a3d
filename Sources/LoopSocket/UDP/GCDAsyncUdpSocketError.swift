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
public struct GCDAsyncUdpSocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The error codes of GCDAsyncUdpSocket, in its order and with its raw values.
    public enum Code: Int, Hashable, Sendable {
        /// Never used.
        case noError = 0
        /// Invalid configuration: bound or connected twice, not bound, both IP families disabled, the loop
        /// shut down, a destination given to a connected socket or none to an unconnected one.
        case badConfigError
        /// Invalid parameter: an unknown host, interface or group, a malformed address, a datagram larger
        /// than ``GCDAsyncUdpSocket/maxSendBufferSize``.
        case badParamError
        /// A send waited longer than its timeout for room in the socket buffer.
        case sendTimeoutError
        /// The socket was closed before the operation could complete.
        case closedError
        /// Anything else, including failed system calls (see ``GCDAsyncUdpSocketError/errno``).
        case otherError
    }

    /// What kind of error this is.
    public let code: Code
    /// The `errno` of a failed system call, if that is what happened.
    public let errno: Errno?
    /// The failed system call, if any.
    public let syscall: SystemCall?
    /// A sentence for people.
    public let message: String
    /// What ``init(_:userInfo:)`` or ``init(_nsError:)`` was given besides the description (nil otherwise).
    let extraUserInfo: ErrorUserInfo?

    /// An error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
        self.errno = nil
        self.syscall = nil
        self.extraUserInfo = nil
    }

    /// An error with every field given (``init(_:userInfo:)`` and ``init(_nsError:)`` build theirs with it).
    init(code: Code, message: String, errno: Errno?, userInfo: ErrorUserInfo?) {
        self.code = code
        self.message = message
        self.errno = errno
        self.syscall = nil
        self.extraUserInfo = userInfo
    }

    /// An error for a failed system call.
    public init(_ error: SyscallError, code: Code = .otherError) {
        self.code = code
        self.message = error.description
        self.errno = error.errno
        self.syscall = error.call
        self.extraUserInfo = nil
    }

    /// An error with a code, a message and the `errno` behind it.
    init(_ code: Code, _ message: String, errno: Errno) {
        self.code = code
        self.message = message
        self.errno = errno
        self.syscall = nil
        self.extraUserInfo = nil
    }

    /// The message, with the code.
    public var description: String { "GCDAsyncUdpSocketError.\(code): \(message)" }

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
extension GCDAsyncUdpSocketError: LocalizedError {
    /// The message.
    public var errorDescription: String? { message }
}

/// Matches an error against a ``GCDAsyncUdpSocketError/Code``: `catch GCDAsyncUdpSocketError.badConfigError`.
public func ~= (code: GCDAsyncUdpSocketError.Code, error: any Error) -> Bool {
    (error as? GCDAsyncUdpSocketError)?.code == code
}
