// Full Foundation, for `NSPOSIXErrorDomain` and `NSError` bridging. Error bridging only.
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
    public var errorDomain: String { errno == nil ? GCDAsyncSocketErrorDomain : NSPOSIXErrorDomain }

    /// The bridged `NSError`'s code: the `errno` of a failed system call, else the code's raw value.
    public var errorCode: Int { errno.map { Int($0.rawValue) } ?? code.rawValue }

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
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }
}
