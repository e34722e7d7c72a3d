import EpollLoop
import Glibc
import Synchronization

/// Connections between two sockets of this process: the client's `didConnect` comes after the listener's
/// `didAcceptNewSocket`, whatever loops and delegate queues the two have.
///
/// CocoaAsyncSocket's own tests rely on that order (they read the accepted socket when the client's connect
/// is reported), but the kernel makes the client's socket writable and the listener's readable at the same
/// moment, and two loops, or one loop's batch of events, may handle either first. So a connect to a listening
/// address of this process holds its report until that listener has told its delegate (or yielded the
/// connection to an `AsyncListener`'s stream): the accepted connection whose peer address is the client's
/// local address. The hold is bounded (``holdLimit``): a listener that never gets to it (its delegate
/// queue stuck, its loop gone) delays the report, and never loses it.
///
/// What it costs a connection whose peer is another process: an atomic load or two on each side (the
/// listener's accept, the client's connect); for a connect made while this process listens, a lock and a
/// table lookup, and when its port is one listened on, a `getsockname` once connected. Connects are counted
/// only from `connect(2)` to their report, and accepts are recorded (a `getpeername`) only while one is
/// counted, so a busy server that never connects to itself pays nothing more.
final class LocalAccepts: Sendable {
    /// The one table of the process.
    static let shared = LocalAccepts()

    /// How long a client waits at most for its listener's accept report, in seconds.
    static let holdLimit: Double = 1

    /// The accept reports a client has not asked for yet are kept up to this many (the oldest dropped
    /// first): while a local connect is in flight, every accept is recorded, other processes' included.
    static let reportLimit = 256

    /// Listening addresses open in this process (the connect's gate).
    private let listenerCount = Atomic<Int>(0)
    /// Connects to a listening address of this process, from `connect(2)` to their report (the accept's gate).
    private let dialCount = Atomic<Int>(0)
    /// Accepted connections recorded but not yet reported (the report's gate).
    private let acceptingCount = Atomic<Int>(0)
    /// `Locked` rather than `Mutex`: ThreadSanitizer sees its ordering (see `Locked`).
    private let state = Locked(State())

    private struct State {
        /// How many listening descriptors each address has (a port reused by two sockets counts twice).
        var listening: [LocalEndpoint: Int] = [:]
        /// Accepted connections whose accept has not been reported yet: their peer, by connection.
        var accepting: [ObjectIdentifier: LocalEndpoint] = [:]
        /// Peers whose accept was reported before their client asked, oldest first.
        var reported: [LocalEndpoint] = []
        /// Clients waiting for the accept of their local address.
        var waiters: [LocalEndpoint: @Sendable () -> Void] = [:]
        var dials = 0
    }

    // MARK: Listeners

    /// A listening descriptor of this process opened on `endpoint` (as bound: its port chosen).
    func listenerOpened(_ endpoint: LocalEndpoint) {
        state.withLock { $0.listening[endpoint, default: 0] += 1 }
        listenerCount.add(1, ordering: .sequentiallyConsistent)
    }

    /// That listening descriptor closed.
    func listenerClosed(_ endpoint: LocalEndpoint) {
        let removed = state.withLock { state -> Bool in
            guard let count = state.listening[endpoint] else { return false }
            state.listening[endpoint] = count > 1 ? count - 1 : nil
            return true
        }
        if removed { listenerCount.subtract(1, ordering: .sequentiallyConsistent) }
    }

    // MARK: The client's side

    /// Whether a connect to `destination` may reach a listener of this process; if so it is counted (until
    /// ``dialEnded()``) before the caller's `connect(2)`, so that its accept is recorded whichever side
    /// gets there first.
    func dialStarting(to destination: LocalEndpoint) -> Bool {
        guard listenerCount.load(ordering: .sequentiallyConsistent) > 0 else { return false }
        let matched = state.withLock { state -> Bool in
            guard state.listening[destination] != nil || state.listening[destination.wildcard] != nil else { return false }
            state.dials += 1
            return true
        }
        if matched { dialCount.add(1, ordering: .sequentiallyConsistent) }
        return matched
    }

    /// A connect counted by ``dialStarting(to:)`` is over (reported, failed or cancelled).
    func dialEnded() {
        state.withLock { state in
            state.dials -= 1
            // No client left to ask for them: the reports recorded meanwhile go.
            if state.dials == 0 { state.reported.removeAll() }
        }
        dialCount.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Whether the client whose local address is `local` must wait for its accept: false if the accept was
    /// reported already; true if `resume` is now filed, to be called (from any thread) once it is. (Keyed by
    /// the local address alone: two clients of this process that share one, connected to two listeners of
    /// it at the same moment, would leave one of them to its hold's limit.)
    func mustAwaitAccept(of local: LocalEndpoint, resume: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state -> Bool in
            if let index = state.reported.firstIndex(of: local) {
                state.reported.remove(at: index)
                return false
            }
            state.waiters[local] = resume
            return true
        }
    }

    /// The client stopped waiting (its hold ran out, or it closed): forgets its resume.
    func stopAwaiting(_ local: LocalEndpoint) {
        _ = state.withLock { $0.waiters.removeValue(forKey: local) }
    }

    // MARK: The listener's side

    /// A listener accepted `connection` from `peer`; it is recorded (until ``acceptReported(_:)``) only
    /// while a connect to this process is in flight.
    func accepted(_ connection: AnyObject, peer: @autoclosure () -> LocalEndpoint?) {
        guard dialCount.load(ordering: .sequentiallyConsistent) > 0, let peer = peer() else { return }
        state.withLock { $0.accepting[ObjectIdentifier(connection)] = peer }
        acceptingCount.add(1, ordering: .sequentiallyConsistent)
    }

    /// The listener's delegate has been told of `connection`: its client, if it waits, goes on.
    func acceptReported(_ connection: AnyObject) {
        guard acceptingCount.load(ordering: .sequentiallyConsistent) > 0 else { return }
        let resume = state.withLock { state -> (@Sendable () -> Void)?? in
            guard let peer = state.accepting.removeValue(forKey: ObjectIdentifier(connection)) else { return nil }
            if let resume = state.waiters.removeValue(forKey: peer) { return .some(resume) }
            if state.dials > 0 {
                if state.reported.count >= Self.reportLimit { state.reported.removeFirst() }
                state.reported.append(peer)
            }
            return .some(nil)
        }
        guard let resume else { return }
        acceptingCount.subtract(1, ordering: .sequentiallyConsistent)
        resume?()
    }
}
