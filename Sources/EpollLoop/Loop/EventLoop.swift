import CEpollShim
import Dispatch
import Glibc
import Synchronization

/// One thread multiplexing nonblocking descriptors with epoll, running tasks and timers.
///
/// A loop owns everything registered with it; all of that state is touched only on the loop's thread, so it
/// needs no locks. Other threads talk to the loop through ``execute(_:file:line:)`` and
/// ``schedule(at:_:file:line:)``, which queue work and wake the loop through an eventfd at most once per loop
/// iteration.
///
/// Run a loop on a thread of its own through ``EventLoopGroup``, or embed it in your own thread:
///
/// ```swift
/// let loop = try EventLoop(name: "main-loop")
/// try loop.execute { print("running on the loop") }
/// try loop.schedule(after: .seconds(1)) { loop.initiateShutdown() }
/// try loop.run()   // returns once the loop has shut down
/// ```
public final class EventLoop: @unchecked Sendable {
    // Thread-safety: `remote` and `threadID` are shared across threads (a pthread-mutex `Locked` and an Atomic); `epollFD`,
    // `wakeFD`, `name` and `finished` are immutable or thread-safe; every other stored property is confined
    // to the loop's thread.

    /// The loop's name (its thread's name, when run by an ``EventLoopGroup``).
    public let name: String

    let epollFD: Int32
    let wakeFD: Int32
    let remote: Locked<RemoteState>
    let threadID = Atomic<UInt>(0)
    /// Threads between deciding to write the wakeup eventfd (under `remote`'s lock) and finishing the write.
    let wakeWriters = Atomic<Int>(0)
    /// Left once the loop has completely shut down.
    let finished = DispatchGroup()

    // Loop-confined state. `@exclusivity(unchecked)` because only the loop's thread touches it, and a dynamic
    // exclusivity check costs more than most of the work it guards on the hot path.
    @exclusivity(unchecked) var localTasks: [LoopWork] = []
    @exclusivity(unchecked) var spareTasks: [LoopWork] = []
    @exclusivity(unchecked) var remoteBatch: [LoopWork] = []
    @exclusivity(unchecked) var timers: TimerWheel<TimerTask>
    @exclusivity(unchecked) var registrations = RegistrationTable()
    /// The handlers ``releaseRetiredHandlers()`` is releasing: swapped with the table's list, so a deinit that
    /// drops another handler appends to an array nobody is mutating.
    @exclusivity(unchecked) var releasing: [any LoopIOHandler] = []
    let events: UnsafeMutablePointer<epoll_event>
    let eventCapacity: Int32
    /// The monotonic time (ns) read at the start of the current iteration's timer phase.
    @exclusivity(unchecked) var now: UInt64
    /// Iterations completed (for tests and statistics).
    @exclusivity(unchecked) var iterations: UInt64 = 0
    /// Swift concurrency jobs run (for tests: a task resumed on the loop should cost one job).
    @exclusivity(unchecked) package internal(set) var jobsRun: UInt64 = 0
    /// Whether this iteration saw a shutdown request (copied from `remote` under its lock).
    @exclusivity(unchecked) var shutdownRequested = false
    /// Counters kept by the loop's thread and published once per iteration (`EventLoop+Metrics.swift`).
    @exclusivity(unchecked) var counters = LoopCounters()
    /// Where the counters are published for other threads to read.
    let metricsCell = LoopMetricsCell()
    /// What the loop's sockets count (``SocketCounts``): `CEPOLL_COUNTER_SLOTS` counters that LoopSocket adds
    /// to on this loop's thread with `cepoll_counter_add`, and ``metrics`` reads from any thread.
    package let socketCounters: UnsafeMutablePointer<UInt64> = {
        let slots = UnsafeMutablePointer<UInt64>.allocate(capacity: Int(CEPOLL_COUNTER_SLOTS))
        slots.initialize(repeating: 0, count: Int(CEPOLL_COUNTER_SLOTS))
        return slots
    }()
    /// Callbacks running longer than this (ns) are reported as stalls; 0: the detector is off.
    let stallThresholdNanoseconds: UInt64
    /// Where the callback now running was queued from, when the stall detector is on and it was recorded.
    @exclusivity(unchecked) var currentCallSite: CallSite?
    /// The lag probe's timer and period (ns), while it runs (`EventLoop+LagProbe.swift`).
    @exclusivity(unchecked) var lagProbe: (timer: TimerID, period: UInt64)?
    /// Per-loop state of a higher layer (LoopSocket keeps its shared receive buffer here). Loop-confined.
    @exclusivity(unchecked) package var attachment: AnyObject?
    /// The loop's face as a serial executor, for actors (see `EventLoop+Executor.swift`). Set once in `init`.
    private(set) var serialExecutor: LoopSerialExecutor!

    /// Creates a loop: its epoll instance and wakeup eventfd. It does nothing until ``run()``.
    ///
    /// - Parameters:
    ///   - name: a name for diagnostics and the thread.
    ///   - maxEventsPerWait: how many readiness events one `epoll_wait` returns at most.
    ///   - stallThreshold: report every callback (I/O handler, task, timer) that holds the loop longer than
    ///     this to ``LoopDiagnostics`` (see `StallReport`); `nil`, the default, turns the detector off.
    public init(name: String = "epoll-loop", maxEventsPerWait: Int = 1024, stallThreshold: Duration? = nil) throws(EventLoopError) {
        self.name = name
        stallThresholdNanoseconds = stallThreshold.map { UInt64(clamping: max(1, $0.nanoseconds)) } ?? 0
        do {
            epollFD = try Syscall.epollCreate()
        } catch { throw .system(error) }
        do {
            wakeFD = try Syscall.eventfd()
        } catch {
            try? Syscall.close(epollFD)
            throw .system(error)
        }
        do {
            try Syscall.epollCtl(epollFD, CEPOLL_CTL_ADD, wakeFD, events: CEPOLL_IN, data: Self.wakeupToken)
        } catch {
            try? Syscall.close(wakeFD)
            try? Syscall.close(epollFD)
            throw .system(error)
        }
        eventCapacity = Int32(max(1, min(maxEventsPerWait, 65536)))
        events = .allocate(capacity: Int(eventCapacity))
        now = Deadline.now().uptimeNanoseconds
        timers = TimerWheel(origin: now)
        remote = Locked(RemoteState())
        finished.enter()
        serialExecutor = LoopSerialExecutor(loop: self)
    }

    deinit {
        // Dropped without ever running or shutting down: it still owns its two descriptors.
        if remote.withLock({ $0.lifecycle == .idle }) {
            try? Syscall.close(wakeFD)
            try? Syscall.close(epollFD)
            finished.leave()
        }
        events.deallocate()
        socketCounters.deallocate()
    }

    /// The `epoll_event.data` of the wakeup eventfd; never a valid (fd, generation) pair of a registration.
    static var wakeupToken: UInt64 { .max }

    /// Whether the calling thread is this loop's thread.
    @inline(__always)
    public var inEventLoop: Bool {
        pthread_self() == pthread_t(threadID.load(ordering: .relaxed))
    }

    /// Stops the process if called off the loop's thread: the guard for loop-confined state.
    @inline(__always)
    public func preconditionInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(inEventLoop, "must be called on event loop '\(name)'", file: file, line: line)
    }

    /// Descriptors currently registered with the loop. Call on the loop.
    public var registeredDescriptorCount: Int {
        preconditionInEventLoop()
        return registrations.count
    }
}

/// The part of a loop that other threads touch, always under its mutex.
struct RemoteState {
    enum Lifecycle {
        /// Created, `run()` not yet called.
        case idle
        case running
        /// A shutdown was requested; the loop finishes its current iteration and then closes down.
        case shuttingDown
        case shutDown
    }

    /// Tasks and jobs queued by other threads (their closures are `@Sendable`).
    var tasks: [LoopWork] = []
    var lifecycle = Lifecycle.idle
    /// `run()` has been called successfully (so a shut-down loop tells "has run" from "never ran").
    var hasRun = false
    /// The loop is in (or about to enter) a blocking `epoll_wait`.
    var asleep = false
    /// The eventfd was written since the loop last went to sleep.
    var wakeupPending = false
    /// When the oldest task in `tasks` was queued (monotonic ns): read by the producer that finds the queue
    /// empty, so one clock reading per batch, for the loop's lag figures.
    var oldestQueuedAt: UInt64 = 0
}
