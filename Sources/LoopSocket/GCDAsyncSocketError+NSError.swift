// Full Foundation, for `NSPOSIXErrorDomain` and `NSError` bridging. Error bridging only.
import EpollLoop
import Foundation

/// `(error as NSError)` reads as GCDAsyncSocket's errors do. A failed system call is reported as
/// GCDAsyncSocket's `errnoErrorWithReason:` reports it: domain `NSPOSIXErrorDomain`, the `errno` as the code
/// (a refused connect is `ECONNREFUSED`); every other error has the domain ``GCDAsyncSocketErrorDomain`` and
/// the ``GCDAsyncSocketError/Code`` raw value as the code. The message is the localized description.
///
/// ```swift
/// if let err = err as NSError?, err.domain == GCDAsyncSocketErrorDomain,
///    err.code == GCDAsyncSocketError.Code.closedError.rawValue { ... }
/// if let err = err as NSError?, err.domain == NSPOSIXErrorDomain, err.code == Int(ECONNREFUSED) { ... }
/// ```
///
/// The domain depends on the error, which `CustomNSError` (one static domain per type) cannot express;
/// Foundation bridges an `Error` that does not adopt it through the `Error` protocol's `_domain` and `_code`.
extension GCDAsyncSocketError {
    /// ``GCDAsyncSocketErrorDomain``, the domain of errors that are not failed system calls.
    public static var errorDomain: String { GCDAsyncSocketErrorDomain }

    /// The bridged `NSError`'s domain: `NSPOSIXErrorDomain` for a failed system call, else ``errorDomain``.
    public var errorDomain: String { core.posixDomain(else: GCDAsyncSocketErrorDomain) }

    /// The bridged `NSError`'s code: the `errno` of a failed system call, else the code's raw value.
    public var errorCode: Int { core.posixCode }

    /// Foundation's bridging reads these (see above).
    public var _domain: String { errorDomain }
    /// Foundation's bridging reads these (see above).
    public var _code: Int { errorCode }
}

/// GCDAsyncSocket's error domain, `"GCDAsyncSocketErrorDomain"`.
public let GCDAsyncSocketErrorDomain = "GCDAsyncSocketErrorDomain"

/// `(error as NSError)` reads as GCDAsyncSocket's TLS errors: the domain `kCFStreamErrorDomainSSL`, the
/// SecureTransport `OSStatus` of the same failure as the code, the message as the localized description.
extension TLSError: CustomNSError {
    /// `"kCFStreamErrorDomainSSL"`, GCDAsyncSocket's domain for TLS failures.
    public static var errorDomain: String { "kCFStreamErrorDomainSSL" }
    /// ``secureTransportCode``.
    public var errorCode: Int { secureTransportCode }
    /// The message, under `NSLocalizedDescriptionKey`.
    public var errorUserInfo: [String: Any] { core.userInfo(message: message) }
}

/// The initialisers and `userInfo` every error struct Swift imports from an Objective-C error enum has on
/// Apple platforms: `GCDAsyncSocketError(.closedError)`, `GCDAsyncSocketError(.otherError, userInfo: […])`.
///
/// It has `CustomNSError`'s members but does not declare the conformance: Foundation on Linux bridges a
/// `CustomNSError` with its static `errorDomain`, which would put a failed system call in this domain instead of
/// `NSPOSIXErrorDomain`, where GCDAsyncSocket reports it (see above).
extension GCDAsyncSocketError {
    /// An error with a code and Foundation's user info; its `NSLocalizedDescriptionKey` entry, if any, is the
    /// message, else the message is Foundation's generic one for the domain and code, as on Apple platforms.
    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        core = ErrorCore(code, userInfo: userInfo, domain: GCDAsyncSocketErrorDomain)
    }

    /// The error an `NSError` describes: one of ``GCDAsyncSocketErrorDomain`` keeps its code (an unknown code
    /// is ``Code/otherError``); one of `NSPOSIXErrorDomain` is a failed system call with that `errno`; any other
    /// is ``Code/otherError``. The description and the other user-info entries are kept.
    public init(_nsError: NSError) {
        core = ErrorCore(nsError: _nsError, domain: GCDAsyncSocketErrorDomain, fallback: .otherError)
    }

    /// The message under `NSLocalizedDescriptionKey`, with the entries given to ``init(_:userInfo:)``.
    public var errorUserInfo: [String: Any] { core.userInfo() }

    /// The bridged `NSError`'s user info (``errorUserInfo``), as Apple's imported error structs have it.
    public var userInfo: [String: Any] { errorUserInfo }
}
