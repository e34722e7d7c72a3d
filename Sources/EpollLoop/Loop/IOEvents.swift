import CEpollShim

/// Readiness conditions, as interest to register or as events reported; the raw values are epoll's bits.
///
/// The conditions are inlinable constants, not stored `static let`s: a stored one is reached from another
/// module through a call to its addressor, and the socket engine tests eight of them per echo round trip
/// (callgrind, `instructions-per-roundtrip.sh async-echo-server`). IOEventsTests holds them equal to the
/// C shim's `CEPOLL_*` values.
public struct IOEvents: OptionSet, Hashable, Sendable {
    /// The epoll bits.
    public let rawValue: UInt32

    /// Wraps epoll bits.
    @inlinable
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `EPOLLIN`: data (or a connection, or EOF) can be read.
    @inlinable public static var readable: IOEvents { IOEvents(rawValue: 0x001) }
    /// `EPOLLOUT`: the send buffer has room, or a nonblocking connect finished.
    @inlinable public static var writable: IOEvents { IOEvents(rawValue: 0x004) }
    /// `EPOLLRDHUP`: the peer shut down its write side (half-close); reported only when registered.
    @inlinable public static var readHangup: IOEvents { IOEvents(rawValue: 0x2000) }
    /// `EPOLLHUP`: both directions are closed. Always reported.
    @inlinable public static var hangup: IOEvents { IOEvents(rawValue: 0x010) }
    /// `EPOLLERR`: an error is pending (read it with `SO_ERROR`). Always reported.
    @inlinable public static var error: IOEvents { IOEvents(rawValue: 0x008) }
    /// `EPOLLONESHOT`, as interest: after one event the descriptor is disarmed until its interest is set
    /// again. The way to silence `EPOLLHUP`, which no interest mask turns off.
    @inlinable public static var oneShot: IOEvents { IOEvents(rawValue: 1 << 30) }
}

/// An object that owns a descriptor registered with an ``EventLoop`` and handles its readiness.
///
/// All calls come on the loop's thread. The loop holds the handler strongly while it is registered.
///
/// ```swift
/// final class PipeReader: IOEventHandler {
///     func handleIO(_ events: IOEvents) { /* read until EAGAIN */ }
/// }
/// try loop.register(fd: pipeReadEnd, interest: .readable, handler: PipeReader())
/// ```
public protocol IOEventHandler: AnyObject {
    /// The descriptor is ready for `events` (level-triggered: the call repeats while the condition holds).
    func handleIO(_ events: IOEvents)

    /// The loop is shutting down. Finish up (for example close the descriptor through the loop and tell your
    /// users); whatever is still registered afterwards is closed by the loop. The default does nothing.
    func loopWillShutDown()
}

extension IOEventHandler {
    /// Does nothing: the loop closes the descriptor.
    public func loopWillShutDown() {}
}

/// What the loop itself calls for a registered descriptor: the same two methods as ``IOEventHandler``, at
/// `package` level. LoopSocket's sockets and the load generator's connections conform to it, so the loop
/// calls them directly while their `handleIO` and `loopWillShutDown` stay out of their public API (a
/// `GCDAsyncSocket` user has no business calling them). A user's ``IOEventHandler`` is reached through
/// ``IOEventHandlerBox``.
package protocol LoopIOHandler: AnyObject {
    /// The descriptor is ready for `events`.
    func handleIO(_ events: IOEvents)
    /// The loop is shutting down.
    func loopWillShutDown()
    /// ``handleIO(_:)`` on the handler at `object`, which the caller keeps alive: how the loop dispatches an
    /// event without retaining and releasing the handler around the call (about 40 instructions per event).
    /// Conformers take the default; a hot one in another module writes the same line out, since it reaches
    /// the default only unspecialized (a generic call and a witness lookup per event).
    static func handleIO(unretained object: UnsafeMutableRawPointer, _ events: IOEvents)
}

extension LoopIOHandler {
    /// Does nothing: the loop closes the descriptor.
    package func loopWillShutDown() {}

    /// Calls the handler at `object` through a reference the caller guarantees, so no retain is made.
    @inlinable
    package static func handleIO(unretained object: UnsafeMutableRawPointer, _ events: IOEvents) {
        Unmanaged<Self>.fromOpaque(object)._withUnsafeGuaranteedRef { $0.handleIO(events) }
    }
}

/// A user's ``IOEventHandler`` as the loop calls it.
final class IOEventHandlerBox: LoopIOHandler {
    let handler: any IOEventHandler

    init(_ handler: any IOEventHandler) { self.handler = handler }

    func handleIO(_ events: IOEvents) { handler.handleIO(events) }

    func loopWillShutDown() { handler.loopWillShutDown() }
}
