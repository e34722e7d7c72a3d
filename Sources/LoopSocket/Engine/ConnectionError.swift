import EpollLoop

/// Why a connection ended, or an operation on it failed, as the engine knows it: the kind, and for a failed
/// system call the call and its `errno`. The face turns it into its own error type (``GCDAsyncSocket`` into
/// ``GCDAsyncSocketError``, with GCDAsyncSocket's codes and messages) where the event leaves the engine.
///
/// Errors that are not the engine's own (a TLS failure, a name that does not resolve) travel inside it
/// unchanged (``Kind/passedThrough``), so a close has one error type from end to end.
struct ConnectionError: Error, @unchecked Sendable {
    // @unchecked: `underlying` is an error some other layer made and handed over; it is never mutated.

    /// What happened.
    enum Kind: UInt8, CaseIterable {
        /// The peer finished its stream (and the connection ended, or a read could not complete).
        case closedByPeer
        /// A read was still queued when the connection closed without an error.
        case readDroppedByClose
        /// A write was still queued when the connection closed without an error.
        case writeDroppedByClose
        /// A read was queued behind `disconnectAfterWriting`.
        case readDroppedByFinishWriting
        /// An `async` read on a connection that is not open.
        case notOpen
        case readTimeout
        case writeTimeout
        case connectTimeout
        /// A read to a separator reached its maximum length without finding it.
        case readMaxedOut
        /// The connection's event loop is shut down.
        case loopShutDown
        /// A connect, listen or adoption on a socket that is not idle.
        case alreadyStarted
        /// A connect or listen with both IP families disabled.
        case noFamilyEnabled
        /// The host resolved only to addresses of disabled IP families.
        case noEnabledAddress
        /// Every connection attempt failed before it started, for no reason a system call gave.
        case noAddressConnected
        /// A write on a connection that is neither connecting nor open.
        case writeNotConnected
        /// A write after `closeWriteStream` or a `disconnectAfter…`.
        case writeAfterFinish
        /// A write that would take the queue over ``SocketOptions/maxQueuedWriteBytes`` (``detail``: the bytes
        /// queued and the cap).
        case writeQueueFull
        /// A system call failed (``failure``: the call and its `errno`).
        case systemCall
        /// The loop refused a registration change for a reason that is the library's own (``detail``).
        case registration
        /// Another layer's error, carried as it is (``underlying``).
        case passedThrough
    }

    let kind: Kind
    /// The failed call and its `errno` (``Kind/systemCall``).
    let failure: SyscallError?
    /// What the rarer kinds carry (``detail``, ``underlying``), out of line: the error is copied through a
    /// close several times (the reads dropped, the writes failed, the sink's last callback), and inline a
    /// `String?` and an `(any Error)?` made each copy two retains and two releases (callgrind,
    /// `instructions-per-connection.sh echo-server`).
    private let rare: Rare?

    /// ``detail`` and ``underlying``, boxed.
    private final class Rare: @unchecked Sendable {
        let detail: String?
        let underlying: (any Error)?

        init(detail: String?, underlying: (any Error)?) {
            self.detail = detail
            self.underlying = underlying
        }
    }

    /// What a message needs besides the kind (``Kind/writeQueueFull``, ``Kind/registration``).
    var detail: String? { rare?.detail }
    /// The error carried (``Kind/passedThrough``).
    var underlying: (any Error)? { rare?.underlying }

    init(_ kind: Kind, detail: String? = nil) {
        self.kind = kind
        self.failure = nil
        self.rare = detail.map { Rare(detail: $0, underlying: nil) }
    }

    /// A failed system call.
    init(_ failure: SyscallError) {
        self.kind = .systemCall
        self.failure = failure
        self.rare = nil
    }

    /// Another layer's error, carried unchanged (one already a ``ConnectionError`` stays itself).
    init(passingThrough error: any Error) {
        if let error = error as? ConnectionError {
            self = error
            return
        }
        self.kind = .passedThrough
        self.failure = nil
        self.rare = Rare(detail: nil, underlying: error)
    }

    /// The error a connection ends with when its loop refused a registration change: a failed `epoll_ctl`
    /// keeps its errno; a loop shutting down is ``Kind/loopShutDown``; anything else is the library's own
    /// fault (reported through ``LibraryFault``).
    static func loop(_ error: any Error, file: StaticString = #fileID, line: UInt = #line) -> ConnectionError {
        guard let error = error as? EventLoopError else {
            LibraryFault.report("an owned descriptor's registration", error, file: file, line: line)
            return ConnectionError(.registration, detail: "\(error)")
        }
        switch error {
        case .system(let failure):
            return ConnectionError(failure)
        case .shutDown:
            return ConnectionError(.loopShutDown)
        default:
            LibraryFault.report("an owned descriptor's registration", error, file: file, line: line)
            return ConnectionError(.registration, detail: error.description)
        }
    }

    /// Whether a TLS failure ended the connection (no close_notify is sent after one).
    var isTLSFailure: Bool { underlying is TLSError }
}
