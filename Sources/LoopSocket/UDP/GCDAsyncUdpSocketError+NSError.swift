// Full Foundation, for `CustomNSError` (FoundationEssentials does not have it). Error bridging only.
import Foundation

/// `(error as NSError)` reads as GCDAsyncUdpSocket's errors do: the domain ``GCDAsyncUdpSocketErrorDomain``,
/// the ``GCDAsyncUdpSocketError/Code`` raw value as the code, the message as the localized description.
extension GCDAsyncUdpSocketError: CustomNSError {
    /// ``GCDAsyncUdpSocketErrorDomain``.
    public static var errorDomain: String { GCDAsyncUdpSocketErrorDomain }
    /// The code's raw value (GCDAsyncUdpSocket's `GCDAsyncUdpSocketError` enum values).
    public var errorCode: Int { code.rawValue }
    /// The message, under `NSLocalizedDescriptionKey`.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }
}

/// GCDAsyncUdpSocket's error domain, `"GCDAsyncUdpSocketErrorDomain"`.
public let GCDAsyncUdpSocketErrorDomain = "GCDAsyncUdpSocketErrorDomain"
