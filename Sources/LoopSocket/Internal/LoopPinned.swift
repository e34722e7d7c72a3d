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
    @inline(__always)
    var context: LoopContext {
        if let cachedContext { return cachedContext }
        return loadContext()
    }

    /// ``context``'s first look-up, out of line: the getter is on every hot path (the receive buffer, the
    /// deferred pumps).
    @inline(never)
    func loadContext() -> LoopContext {
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
/// A loop's thread waits for one loop at a time, so the record is a map from waiting loop to awaited loop,
/// and the check a walk along it from the loop about to be waited for, looking for the caller's own loop.
/// Recording and walking happen under one lock: of two loops about to wait for each other, the first to
/// take the lock finds no cycle and waits, and the second finds the first's entry, hence the cycle, and
/// does not. A thread that runs no loop (``EventLoop/current`` is nil) holds no loop still while it waits,
/// so it can close no cycle: it waits unrecorded.
enum LoopWaits {
    /// One wait in the record, until it ends (nil: the caller runs no loop, nothing was recorded).
    struct Token {
        fileprivate let waiter: ObjectIdentifier?
    }

    /// The outcome of ``begin(waitingFor:)``.
    enum Begin {
        /// Recorded: wait, then ``end(_:)``.
        case wait(Token)
        /// The caller is this loop's thread, and waiting would close a cycle: nothing was recorded.
        case wouldDeadlock(caller: EventLoop)
    }

    /// Waiting loop → the loop it waits for. Identities only: both loops are alive while the wait lasts.
    private static let waits = Locked([ObjectIdentifier: ObjectIdentifier]())

    /// Records that the calling thread is about to wait for `target` (not its own loop), unless the loops
    /// `target` waits for, directly or through others, include the caller's: then the caller must not wait.
    static func begin(waitingFor target: EventLoop) -> Begin {
        guard let caller = EventLoop.current else { return .wait(Token(waiter: nil)) }
        let waiter = ObjectIdentifier(caller)
        return waits.withLock { waits in
            var next: ObjectIdentifier? = ObjectIdentifier(target)
            var steps = 0
            while let loop = next, steps <= waits.count {
                if loop == waiter { return .wouldDeadlock(caller: caller) }
                next = waits[loop]
                steps += 1
            }
            waits[waiter] = ObjectIdentifier(target)
            return .wait(Token(waiter: waiter))
        }
    }

    /// Removes the wait `token` stands for, once it is over.
    static func end(_ token: Token) {
        guard let waiter = token.waiter else { return }
        waits.withLock { _ = $0.removeValue(forKey: waiter) }
    }
}
