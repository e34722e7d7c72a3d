import EpollLoop

/// An object that lives on one event loop (``GCDAsyncSocket``, ``GCDAsyncUdpSocket``): the ways in from
/// other threads and the loop's shared state, written once for both.
protocol LoopPinned: AnyObject {
    /// The loop everything of this object runs on.
    var eventLoop: EventLoop { get }
    /// ``context``'s cache. Loop only.
    var cachedContext: LoopContext? { get set }
}

extension LoopPinned {
    /// The shared per-loop state. Loop only.
    var context: LoopContext {
        if let cachedContext { return cachedContext }
        // The first socket to run on this loop: its thread can tell it is this loop's from now on (see
        // `LoopWaits`).
        if eventLoop.attachment == nil { LoopWaits.note([eventLoop]) }
        let context = LoopContext.of(eventLoop)
        cachedContext = context
        return context
    }

    /// Runs `body` on the loop: now if already there, otherwise queued (one wakeup per loop iteration).
    /// Returns false if the loop is shut down.
    @discardableResult
    func onLoop(_ body: @escaping @Sendable () -> Void) -> Bool {
        if eventLoop.inEventLoop {
            body()
            return true
        }
        do {
            try eventLoop.execute(body)
            return true
        } catch {
            return false
        }
    }

    /// Runs `body` on the loop and waits for its result, as GCDAsyncSocket's `dispatch_sync` onto its socket
    /// queue does (inline on the loop itself), from any thread, another loop's included: except when that
    /// wait could deadlock, that is when this object's loop already waits, itself or through other loops,
    /// for the calling loop (``LoopWaits``). Then `body` does not run, and the caller falls back to what
    /// needs no wait: queueing the work, or refusing the call.
    func waitForLoop<T>(_ body: () -> T) -> LoopWait<T> {
        if eventLoop.inEventLoop { return .ran(body()) }
        let token: LoopWaits.Token
        switch LoopWaits.begin(waitingFor: eventLoop) {
        case .wait(let waiting): token = waiting
        case .wouldDeadlock(let caller): return .wouldDeadlock(caller: caller)
        }
        defer { LoopWaits.end(token) }
        var result: T?
        withoutActuallyEscaping({ result = body() }) { block in
            let box = PerformBox(block)
            let done = DispatchSemaphoreBox()
            if onLoop({ box.run(); done.signal() }) { done.wait() }
        }
        guard let result else { return .loopShutDown }
        return .ran(result)
    }
}

extension LoopPinned {
    /// GCDAsyncSocket's `performBlock:` for both socket types: runs `block` on the loop and waits for it.
    /// A block cannot be run later nor refused quietly, so a wait that would deadlock two loops stops the
    /// process with an explanation instead of hanging both. Does nothing if the loop is shut down.
    func performWaiting(_ block: () -> Void, _ type: StaticString) {
        if case .wouldDeadlock(let caller) = waitForLoop(block) {
            preconditionFailure("""
                \(type).perform(_:) called on event loop '\(caller.name)''s thread would wait for loop \
                '\(eventLoop.name)', which is waiting (itself or through other loops) for '\(caller.name)': \
                the loops would deadlock. Queue the block with eventLoop.execute instead.
                """)
        }
    }
}

/// What came of ``LoopPinned/waitForLoop(_:)``.
enum LoopWait<T> {
    /// The loop ran the body, which returned this.
    case ran(T)
    /// The loop is shut down: the body did not run.
    case loopShutDown
    /// The caller is `caller`'s thread, and the socket's loop waits (itself or through other loops) for
    /// `caller`: waiting would deadlock them, so the body did not run.
    case wouldDeadlock(caller: EventLoop)
}

/// The process's wait-for record: which loop's thread currently waits for which loop, in
/// ``LoopPinned/waitForLoop(_:)``, so that a wait that would close a cycle (A waits for B, B waits for A, or
/// A → B → C → A) is not started: the call falls back instead, and every other wait goes on as
/// `dispatch_sync` would.
///
/// A thread waits for one loop at a time, so the record is a map from waiter to loop, and the check a walk
/// along it from the loop about to be waited for, looking for the caller's own loop. Recording and walking
/// happen under one lock, record first: of two loops about to wait for each other, the first to take the
/// lock finds no cycle and waits, and the second finds the first's entry, hence the cycle, and does not.
///
/// EpollLoop keeps no "current loop", so a caller finds which loop it runs by asking each loop known here
/// (`inEventLoop`): the loops a socket has run on, those a socket has been created on, and every loop a call
/// has been about to wait for (noted before the walk). A caller that is none of them (a thread that is no
/// loop's, or a loop not yet known) cannot close a cycle now: every loop some thread waits for is known. It
/// is recorded anyway, with how many loops were known then, because its thread may be that of a loop noted
/// later: a walk reaching such a loop follows its own wait and those of the unknown waiters that may be its
/// thread (those that looked before the loop was noted). That errs only towards not waiting, and only while
/// a thread that was none of the known loops waits for a loop that waits for one noted since.
enum LoopWaits {
    /// One wait in the record, until it ends.
    struct Token {
        fileprivate let id: UInt64
    }

    /// The outcome of ``begin(waitingFor:)``.
    enum Begin {
        /// Recorded: wait, then ``end(_:)``.
        case wait(Token)
        /// The caller is this loop's thread, and waiting would close a cycle: nothing was recorded.
        case wouldDeadlock(caller: EventLoop)
    }

    private struct Known {
        weak var loop: EventLoop?
        /// When the loop was noted, counted in loops noted.
        let order: UInt64
    }

    private struct Waiting {
        let id: UInt64
        /// The waiting thread's loop; nil when the thread was none of the known loops.
        let waiter: EventLoop?
        /// For a waiter that was none of the known loops: how many loops had been noted when it looked.
        let knownThrough: UInt64
        let target: EventLoop
    }

    private struct State {
        /// The process's loops, scanned only by calls about to wait for another loop.
        var known: [ObjectIdentifier: Known] = [:]
        var noted: UInt64 = 0
        var waits: [Waiting] = []
        var nextID: UInt64 = 0
    }

    private static let state = Locked(State())

    /// Notes `loops` (idempotent), so that their threads can tell they are theirs.
    static func note(_ loops: [EventLoop]) {
        state.withLock { state in
            for loop in loops { note(loop, in: &state) }
        }
    }

    /// Records that the calling thread is about to wait for `target` (not its own loop), then walks the
    /// record from `target`: if the walk reaches the caller's loop, the caller must not wait, and the
    /// record is left as it was.
    static func begin(waitingFor target: EventLoop) -> Begin {
        state.withLock { state in
            note(target, in: &state)
            let caller = state.known.values.lazy.compactMap(\.loop).first { $0.inEventLoop }
            let id = state.nextID
            state.nextID &+= 1
            state.waits.append(Waiting(id: id, waiter: caller, knownThrough: state.noted, target: target))
            if let caller, reaches(caller, from: target, in: state) {
                state.waits.removeLast()
                return .wouldDeadlock(caller: caller)
            }
            return .wait(Token(id: id))
        }
    }

    /// Removes the wait `token` stands for, once it is over.
    static func end(_ token: Token) {
        state.withLock { state in state.waits.removeAll { $0.id == token.id } }
    }

    /// Whether the loops `start` waits for, directly or through others, include `goal`. Each loop has one
    /// wait at most, plus those of unknown waiters that may be its thread: a walk of as many steps as there
    /// are waits, at most.
    private static func reaches(_ goal: EventLoop, from start: EventLoop, in state: State) -> Bool {
        var pending = [start]
        var visited: [ObjectIdentifier] = []
        while let loop = pending.popLast() {
            if loop === goal { return true }
            let id = ObjectIdentifier(loop)
            if visited.contains(id) { continue }
            visited.append(id)
            let order = state.known[ObjectIdentifier(loop)]?.order ?? .max
            for wait in state.waits {
                if let waiter = wait.waiter {
                    if waiter === loop { pending.append(wait.target) }
                } else if wait.knownThrough < order {
                    // Its thread was none of the loops known when it looked; it may be this one's, noted since.
                    pending.append(wait.target)
                }
            }
        }
        return false
    }

    private static func note(_ loop: EventLoop, in state: inout State) {
        let id = ObjectIdentifier(loop)
        if state.known[id]?.loop === loop { return }
        // A new loop is rare (a group's start): drop the entries of loops gone since.
        state.known = state.known.filter { $0.value.loop != nil }
        state.noted &+= 1
        state.known[id] = Known(loop: loop, order: state.noted)
    }
}
