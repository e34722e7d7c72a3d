/// Why an event loop refused a request.
public enum EventLoopError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The loop is shut down (or shutting down and no longer accepting new work from other threads).
    case shutDown
    /// `run()` was called on a loop that is already running or has run.
    case alreadyRunning
    /// A blocking call (`shutdownGracefully`) was made on the loop's own thread, where it would deadlock.
    case calledOnLoop
    /// The loop did not finish shutting down within the given time.
    case shutdownTimedOut
    /// The descriptor is already registered with this loop.
    case alreadyRegistered(fd: Int32)
    /// The descriptor is not registered with this loop.
    case notRegistered(fd: Int32)
    /// A system call failed.
    case system(SyscallError)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .shutDown: return "the event loop is shut down"
        case .alreadyRunning: return "the event loop is already running (or has run)"
        case .calledOnLoop: return "this blocking call cannot be made on the event loop's own thread"
        case .shutdownTimedOut: return "the event loop did not shut down in time"
        case .alreadyRegistered(let fd): return "descriptor \(fd) is already registered with this event loop"
        case .notRegistered(let fd): return "descriptor \(fd) is not registered with this event loop"
        case .system(let error): return error.description
        }
    }
}
