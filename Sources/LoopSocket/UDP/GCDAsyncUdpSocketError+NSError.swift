// Full Foundation, for `CustomNSError` (FoundationEssentials does not have it). Error bridging only.
import EpollLoop
import Foundation

/// `(error as NSError)` reads as GCDAsyncUdpSocket's errors do: the domain ``GCDAsyncUdpSocketErrorDomain``,
/// the ``GCDAsyncUdpSocketError/Code`` raw value as the code, the message as the localized description.
extension GCDAsyncUdpSocketError: CustomNSError {
    /// ``GCDAsyncUdpSocketErrorDomain``.
    public static var errorDomain: String { GCDAsyncUdpSocketErrorDomain }
    /// The code's raw value (GCDAsyncUdpSocket's `GCDAsyncUdpSocketError` enum values).
    public var errorCode: Int { code.rawValue }
    /// The message under `NSLocalizedDescriptionKey`, with the entries given to ``init(_:userInfo:)``.
    public var errorUserInfo: [String: Any] { core.userInfo() }
}

/// GCDAsyncUdpSocket's error domain, `"GCDAsyncUdpSocketErrorDomain"`.
public let GCDAsyncUdpSocketErrorDomain = "GCDAsyncUdpSocketErrorDomain"

/// The initialisers and `userInfo` every error struct Swift imports from an Objective-C error enum has on
/// Apple platforms: `GCDAsyncUdpSocketError(.closedError)`, `GCDAsyncUdpSocketError(.otherError, userInfo: […])`.
extension GCDAsyncUdpSocketError {
    /// An error with a code and Foundation's user info; its `NSLocalizedDescriptionKey` entry, if any, is the
    /// message, else the message is Foundation's generic one for the domain and code, as on Apple platforms.
    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        core = ErrorCore(code, userInfo: userInfo, domain: GCDAsyncUdpSocketErrorDomain)
    }

    /// The error an `NSError` describes: one of ``GCDAsyncUdpSocketErrorDomain`` keeps its code (an unknown
    /// code is ``Code/otherError``); one of `NSPOSIXErrorDomain` keeps the `errno`, as ``Code/otherError``; any
    /// other is ``Code/otherError``. The description and the other user-info entries are kept.
    public init(_nsError: NSError) {
        core = ErrorCore(nsError: _nsError, domain: GCDAsyncUdpSocketErrorDomain, fallback: .otherError)
    }

    /// The bridged `NSError`'s user info (``errorUserInfo``), as Apple's imported error structs have it.
    public var userInfo: [String: Any] { errorUserInfo }
}
