// Full Foundation, for `CustomNSError` (FoundationEssentials does not have it). Error bridging only.
import Foundation

/// `(error as NSError)` reads as GCDAsyncSocket's errors do: the domain ``GCDAsyncSocketErrorDomain``, the
/// ``GCDAsyncSocketError/Code`` raw value as the code, the message as the localized description.
///
/// ```swift
/// if let err = err as NSError?, err.domain == GCDAsyncSocketErrorDomain,
///    err.code == GCDAsyncSocketError.Code.closedError.rawValue { ... }
/// ```
extension GCDAsyncSocketError: CustomNSError {
    /// ``GCDAsyncSocketErrorDomain``.
    public static var errorDomain: String { GCDAsyncSocketErrorDomain }
    /// The code's raw value (GCDAsyncSocket's `GCDAsyncSocketError` enum values).
    public var errorCode: Int { code.rawValue }
    /// The message, under `NSLocalizedDescriptionKey`.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }
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
