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
        // The first socket to run on this loop: its thread is a loop thread from now on (see `LoopThreads`).
        if eventLoop.attachment == nil { LoopThreads.note(eventLoop) }
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

    /// Whether the calling thread is another event loop's: a call that waited for this object's loop there
    /// would hold that loop still meanwhile, and two loops waiting for each other would never go on.
    var calledFromAnotherLoop: Bool {
        !eventLoop.inEventLoop && LoopThreads.callerIsLoop(noting: eventLoop)
    }

    /// Runs `body` on the loop and waits for its result, as GCDAsyncSocket's `dispatch_sync` onto its socket
    /// queue does; `nil` if the loop is shut down. For the calls whose answer only the loop has: callers on
    /// another loop's thread must not come here (``calledFromAnotherLoop``), except `perform(_:)`, whose
    /// contract is to wait.
    func waitForLoop<T>(_ body: () -> T) -> T? {
        if eventLoop.inEventLoop { return body() }
        var result: T?
        withoutActuallyEscaping({ result = body() }) { block in
            let box = PerformBox(block)
            let done = DispatchSemaphoreBox()
            if onLoop({ box.run(); done.signal() }) { done.wait() }
        }
        return result
    }
}

/// The threads that run event loops, as far as LoopSocket can tell: the loops its sockets have run on, and
/// every loop a call has been about to wait for. EpollLoop keeps no "current loop" of its own, and a call
/// that would wait for a socket's loop must know whether its caller is a loop (then it must not wait).
///
/// Both kinds of entry close the one case that matters, two loops each about to wait for the other: each
/// notes the loop it would wait for, then asks about its own thread, under the same lock, so whichever asks
/// second finds its own loop noted by the other and does not wait.
enum LoopThreads {
    private struct Entry {
        weak var loop: EventLoop?
    }

    /// Few entries (one per loop of the process), scanned only by calls that would otherwise wait.
    private static let loops = Locked<[Entry]>([])

    /// Notes `loop` (idempotent), dropping entries of loops gone since.
    static func note(_ loop: EventLoop) {
        loops.withLock { add(loop, to: &$0) }
    }

    /// Notes `target`, then answers whether the calling thread runs one of the noted loops.
    static func callerIsLoop(noting target: EventLoop) -> Bool {
        loops.withLock { entries in
            add(target, to: &entries)
            return entries.contains { $0.loop?.inEventLoop == true }
        }
    }

    private static func add(_ loop: EventLoop, to entries: inout [Entry]) {
        if entries.contains(where: { $0.loop === loop }) { return }
        entries.removeAll { $0.loop == nil }
        entries.append(Entry(loop: loop))
    }
}
