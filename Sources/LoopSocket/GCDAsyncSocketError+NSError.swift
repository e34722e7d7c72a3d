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
        let (message, rest) = ErrorUserInfo.split(userInfo, domain: GCDAsyncSocketErrorDomain, code: code.rawValue)
        self.init(code: code, message: message, errno: nil, userInfo: rest)
    }

    /// The error an `NSError` describes: one of ``GCDAsyncSocketErrorDomain`` keeps its code (an unknown code
    /// is ``Code/otherError``); one of `NSPOSIXErrorDomain` is a failed system call with that `errno`; any other
    /// is ``Code/otherError``. The description and the other user-info entries are kept.
    public init(_nsError: NSError) {
        let domain = _nsError.domain
        let (message, rest) = ErrorUserInfo.split(_nsError.userInfo, domain: domain, code: _nsError.code)
        if domain == NSPOSIXErrorDomain, let value = Int32(exactly: _nsError.code) {
            self.init(code: .otherError, message: message, errno: Errno(rawValue: value), userInfo: rest)
        } else {
            let code = domain == GCDAsyncSocketErrorDomain ? Code(rawValue: _nsError.code) ?? .otherError : .otherError
            self.init(code: code, message: message, errno: nil, userInfo: rest)
        }
    }

    /// The message under `NSLocalizedDescriptionKey`, with the entries given to ``init(_:userInfo:)``.
    public var errorUserInfo: [String: Any] {
        var info = extraUserInfo?.entries ?? [:]
        info[NSLocalizedDescriptionKey] = message
        return info
    }

    /// The bridged `NSError`'s user info (``errorUserInfo``), as Apple's imported error structs have it.
    public var userInfo: [String: Any] { errorUserInfo }
}

/// User-info entries an error was created with, besides its description: compared as Foundation compares
/// `NSError` user info (`NSDictionary` equality). Immutable once made.
final class ErrorUserInfo: Hashable, @unchecked Sendable {
    let entries: [String: Any]

    init(_ entries: [String: Any]) {
        self.entries = entries
    }

    /// The message an error with `userInfo` has (its description, else Foundation's generic sentence) and the
    /// other entries (nil when there are none).
    static func split(_ userInfo: [String: Any], domain: String, code: Int) -> (String, ErrorUserInfo?) {
        var rest = userInfo
        let description = rest.removeValue(forKey: NSLocalizedDescriptionKey)
        let message = description.map { "\($0)" } ?? "The operation couldn’t be completed. (\(domain) error \(code).)"
        return (message, rest.isEmpty ? nil : ErrorUserInfo(rest))
    }

    /// Equal keys, and values equal as `AnyHashable` (or the same object); a value that is neither is
    /// equal only to itself.
    static func == (lhs: ErrorUserInfo, rhs: ErrorUserInfo) -> Bool {
        guard lhs !== rhs else { return true }
        guard lhs.entries.count == rhs.entries.count else { return false }
        return lhs.entries.allSatisfy { key, value in
            guard let other = rhs.entries[key] else { return false }
            if let a = value as? AnyHashable, let b = other as? AnyHashable { return a == b }
            return (value as AnyObject) === (other as AnyObject)
        }
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(entries.keys.sorted())
    }
}
