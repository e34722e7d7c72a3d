// Full Foundation, for `NSError`, `NSPOSIXErrorDomain` and `NSLocalizedDescriptionKey`. Error bridging only.
import EpollLoop
import Foundation

/// What ``GCDAsyncSocketError``, ``GCDAsyncUdpSocketError`` and ``TLSError`` hold and do alike: a code, a
/// message (given, or made from the failed system call when asked for), the `errno` and call of a failed system
/// call, the user info an `NSError` brought, and the `NSError` bridging made of them. Each public type stores
/// one and forwards to it, so that the three cannot drift apart in how they describe, compare or bridge.
///
/// Generic over the type's `Code` so that the code stays its one-byte enum (a raw `Int` would cost 8 bytes
/// and an unchecked conversion back on every read).
struct ErrorCore<Code: RawRepresentable & Hashable & Sendable>: Hashable, Sendable where Code.RawValue == Int {
    // Declaration order is layout order: the two word-aligned fields first, the small ones packed behind them,
    // 31 bytes in all. A `GCDAsyncSocketError` is boxed into `any Error` on every connection that ends with an
    // error, and a smaller box is a smaller allocation.

    /// The message given at creation; nil for a failed system call, whose message is made when asked for.
    /// (A connection reset by its peer is an error on every such close: formatting `strerror` into a string
    /// for each one, read or not, was a tenth of the user-space work of a connect-echo-close cycle.)
    private let givenMessage: String?
    /// What an `NSError` or a user-info initialiser brought besides the description (nil otherwise).
    let extraUserInfo: ErrorUserInfo?
    /// The `errno` of a failed system call, if that is what happened.
    let errno: Errno?
    /// The failed system call, if any.
    let syscall: SystemCall?
    /// What kind of error this is.
    let code: Code

    /// An error with every field given.
    init(_ code: Code, message: String?, errno: Errno? = nil, syscall: SystemCall? = nil, userInfo: ErrorUserInfo? = nil) {
        self.givenMessage = message
        self.extraUserInfo = userInfo
        self.errno = errno
        self.syscall = syscall
        self.code = code
    }

    /// A failed system call, with its `errno`; the message waits until someone reads it.
    init(_ error: SyscallError, code: Code) {
        self.init(code, message: nil, errno: error.errno, syscall: error.call)
    }

    /// The message given, else the failed call's (`"recv failed: Connection reset by peer (errno 104)"`), else
    /// the code's name.
    var message: String {
        if let givenMessage { return givenMessage }
        if let syscall, let errno { return SyscallError(syscall, errno: errno).description }
        return "\(code)"
    }

    /// `"<typeName>.<code>: <message>"`; `message` replaces ``message`` for a type that adds to it.
    func description(typeName: String, message: String? = nil) -> String {
        "\(typeName).\(code): \(message ?? self.message)"
    }
}

// MARK: NSError bridging

extension ErrorCore {
    /// What Apple's imported error structs' `init(_:userInfo:)` makes: the `NSLocalizedDescriptionKey` entry,
    /// if any, is the message, else Foundation's generic sentence for `domain` and the code.
    init(_ code: Code, userInfo: [String: Any], domain: String) {
        let (message, rest) = ErrorUserInfo.split(userInfo, domain: domain, code: code.rawValue)
        self.init(code, message: message, userInfo: rest)
    }

    /// What an `NSError` describes to a type whose own domain is `domain`: an error of that domain keeps its
    /// code (an unknown one is `fallback`); one of `NSPOSIXErrorDomain` is `fallback` with that `errno`; any
    /// other is `fallback`. The description and the other user-info entries are kept.
    init(nsError: NSError, domain: String, fallback: Code) {
        let (message, rest) = ErrorUserInfo.split(nsError.userInfo, domain: nsError.domain, code: nsError.code)
        let errno = nsError.domain == NSPOSIXErrorDomain ? Int32(exactly: nsError.code).map(Errno.init(rawValue:)) : nil
        let code = nsError.domain == domain ? Code(rawValue: nsError.code) ?? fallback : fallback
        self.init(code, message: message, errno: errno, userInfo: rest)
    }

    /// The bridged domain of a type that reports a failed system call as GCDAsyncSocket's
    /// `errnoErrorWithReason:` does: `NSPOSIXErrorDomain` when there is an `errno`, else `domain`.
    func posixDomain(else domain: String) -> String {
        errno == nil ? domain : NSPOSIXErrorDomain
    }

    /// The bridged code that goes with ``posixDomain(else:)``: the `errno`, else the code's raw value.
    var posixCode: Int { errno.map { Int($0.rawValue) } ?? code.rawValue }

    /// The bridged user info: the entries an `NSError` or `init(_:userInfo:)` brought, and the message
    /// (``message``, or the type's own `message`) under `NSLocalizedDescriptionKey`.
    func userInfo(message: String? = nil) -> [String: Any] {
        var info = extraUserInfo?.entries ?? [:]
        info[NSLocalizedDescriptionKey] = message ?? self.message
        return info
    }
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
