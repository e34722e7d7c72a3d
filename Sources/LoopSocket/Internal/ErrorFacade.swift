import FoundationEssentials

/// A public error type over an ``ErrorCore`` (``GCDAsyncSocketError``, ``GCDAsyncUdpSocketError``,
/// ``TLSError``): what it tells through `CustomStringConvertible` and `LocalizedError` is written here once,
/// from the core and the type's ``message``.
///
/// Only those two: an internal protocol can give a public type the members of its public conformances,
/// but no public member of its own, so the type's accessors (`code`, `message`, `errno`, `syscall`) stay
/// declared on each type, each one line over the core. A public protocol could not reach the core without
/// making it public too. `CustomNSError`'s `errorUserInfo` has a default of that protocol's, which a default
/// here would make ambiguous, so each type that adopts it says which it is.
protocol ErrorFacade: CustomStringConvertible, LocalizedError {
    associatedtype Code: RawRepresentable & Hashable & Sendable where Code.RawValue == Int
    /// The code, message, `errno`, call and user info.
    var core: ErrorCore<Code> { get }
    /// The sentence for people: the core's message, or more (``TLSError`` adds the verification failure).
    var message: String { get }
}

extension ErrorFacade {
    /// The message, with the code: `"GCDAsyncSocketError.readTimeoutError: Read operation timed out"`.
    public var description: String { core.description(typeName: "\(Self.self)", message: message) }

    /// The message: an `Error`'s `localizedDescription` reads it, as it reads GCDAsyncSocket's `NSError`s'.
    public var errorDescription: String? { message }
}
