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
    /// queue does; `nil` if the loop is shut down. Called from another loop's thread, that loop waits.
    func syncOnLoop<T>(_ body: () -> T) -> T? {
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
