import EpollLoop
import FoundationEssentials

/// The error a ``GCDAsyncSocket`` reports, with the same codes as GCDAsyncSocket's `GCDAsyncSocketError`.
///
/// Matches as the Objective-C error enum does when Swift imports it:
///
/// ```swift
/// func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
///     if let err = err as? GCDAsyncSocketError, err.code == .readTimeoutError { ... }
/// }
/// do { try sock.connect(toHost: "", onPort: 80) } catch GCDAsyncSocketError.badParamError { ... }
/// ```
///
/// Failures of system calls keep their `errno` (``errno``) and the call that failed (``syscall``); their code
/// is ``Code/otherError``, except a timeout or refusal the kernel reports, which keep theirs in `errno`.
public struct GCDAsyncSocketError: Error, Hashable, Sendable, CustomStringConvertible, ErrorFacade {
    /// The error codes of GCDAsyncSocket, in its order and with its raw values.
    public enum Code: Int, Hashable, Sendable {
        /// Never used.
        case noError = 0
        /// Invalid configuration: already connected, no delegate, both IP families disabled, a loop shut down.
        case badConfigError
        /// Invalid parameter: empty host, bad interface, a path too long for a Unix socket, an unknown host.
        case badParamError
        /// The connection attempt timed out.
        case connectTimeoutError
        /// A read operation timed out.
        case readTimeoutError
        /// A write operation timed out.
        case writeTimeoutError
        /// A read-to-separator read reached its maxLength without finding the separator.
        case readMaxedOutError
        /// The peer closed the connection.
        case closedError
        /// Anything else, including failed system calls (see ``GCDAsyncSocketError/errno``).
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

    /// GCDAsyncSocket's description (the same as ``message``).
    public var localizedDescription: String { message }

    /// ``Code/noError``.
    public static var noError: Code { .noError }
    /// ``Code/badConfigError``.
    public static var badConfigError: Code { .badConfigError }
    /// ``Code/badParamError``.
    public static var badParamError: Code { .badParamError }
    /// ``Code/connectTimeoutError``.
    public static var connectTimeoutError: Code { .connectTimeoutError }
    /// ``Code/readTimeoutError``.
    public static var readTimeoutError: Code { .readTimeoutError }
    /// ``Code/writeTimeoutError``.
    public static var writeTimeoutError: Code { .writeTimeoutError }
    /// ``Code/readMaxedOutError``.
    public static var readMaxedOutError: Code { .readMaxedOutError }
    /// ``Code/closedError``.
    public static var closedError: Code { .closedError }
    /// ``Code/otherError``.
    public static var otherError: Code { .otherError }

    // The usual ends of a connection are boxed once: a struct converted to `any Error` gets a new box each
    // time, an allocation (and its release chain) per connection that ends this way, and these are the ends
    // of most connections under churn (callgrind, `loadgen churn`).

    /// The peer closed its side (end of stream), boxed once.
    static let closedByPeer: any Error & Sendable = GCDAsyncSocketError(.closedError, "Socket closed by remote peer")
    /// What a read still queued gets when its socket disconnects without an error, boxed once.
    static let disconnected: any Error & Sendable = GCDAsyncSocketError(.closedError, "The socket disconnected")
    /// What a write still queued gets when its socket disconnects without an error, boxed once.
    static let disconnectedBeforeWrite: any Error & Sendable =
        GCDAsyncSocketError(.closedError, "The socket disconnected before the write completed")
    private static let recvReset: any Error & Sendable = GCDAsyncSocketError(SyscallError(.recv, errno: .connectionReset))
    private static let sendReset: any Error & Sendable = GCDAsyncSocketError(SyscallError(.send, errno: .connectionReset))
    private static let sendBrokenPipe: any Error & Sendable = GCDAsyncSocketError(SyscallError(.send, errno: .brokenPipe))

    /// The error a failed system call ends a connection with; a reset or broken pipe reuses a boxed value.
    static func closing(_ error: SyscallError) -> any Error {
        switch (error.call, error.errno) {
        case (.recv, .connectionReset): recvReset
        case (.send, .connectionReset): sendReset
        case (.send, .brokenPipe): sendBrokenPipe
        default: GCDAsyncSocketError(error)
        }
    }

    static let readTimeout = GCDAsyncSocketError(.readTimeoutError, "Read operation timed out")
    static let writeTimeout = GCDAsyncSocketError(.writeTimeoutError, "Write operation timed out")
    static let connectTimeout = GCDAsyncSocketError(.connectTimeoutError, "Attempt to connect to host timed out")
    static let readMaxedOut = GCDAsyncSocketError(.readMaxedOutError, "Read operation reached set maximum length")
    static let loopShutDown = GCDAsyncSocketError(.badConfigError, "The socket's event loop is shut down")
}

/// `err.localizedDescription` on an `Error` (as delegate callbacks receive it) is the message, as with
/// GCDAsyncSocket's `NSError`s, not Foundation's generic "The operation could not be completed".
extension GCDAsyncSocketError: LocalizedError {}

/// Matches an error against a ``GCDAsyncSocketError/Code``: `catch GCDAsyncSocketError.readTimeoutError`.
public func ~= (code: GCDAsyncSocketError.Code, error: any Error) -> Bool {
    (error as? GCDAsyncSocketError)?.code == code
}
