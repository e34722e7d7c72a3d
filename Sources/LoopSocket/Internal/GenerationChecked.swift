import Dispatch
import EpollLoop

/// An engine whose work outlives the connection or socket it was started for: a timer, an answer from a
/// delegate's queue, a filter's verdict, a resolved name. Such work comes back to the loop later, and by
/// then the socket may have closed, or closed and been claimed again. The engine's ``generation`` changes
/// at each such turn; work stamped with an older one is stale and does nothing.
///
/// The ways back to the loop below stamp the work and drop it when stale, so that each place that starts
/// such work says only what to do, not how to tell whether it still may. A hop costs one closure context,
/// holding the engine, the stamp and the body, as a hand-written one does, when the body captures only
/// `self` (such a closure needs no context of its own); a body that captures more has a second. Work done
/// per datagram passes what it found as a value instead (``onLoop(ifStill:passing:_:)``); the rest runs
/// once per timeout, trust answer, name look-up or connect, and ``offLoop(_:thenIfStillCurrent:)`` blocks
/// on `getaddrinfo`.
protocol GenerationChecked: LoopPinned, Sendable {
    /// Changes whenever work started before is void (TCP: a new connect, listen or adopted descriptor
    /// claims the socket; UDP: the socket closes). Loop only.
    var generation: UInt32 { get }
}

extension GenerationChecked {
    /// Whether the engine still serves the work stamped with `generation`. Loop only.
    @inline(__always)
    func isCurrent(_ generation: UInt32) -> Bool {
        self.generation == generation
    }

    /// Runs `body` on the loop (now if already there, else queued) if the engine still serves `generation`
    /// then. Any thread: `generation` is the stamp the loop read when the work began. False if the loop is
    /// shut down.
    @discardableResult
    func onLoop(ifStill generation: UInt32, _ body: @escaping @Sendable () -> Void) -> Bool {
        onLoop { [self] in
            if isCurrent(generation) { body() }
        }
    }

    /// ``onLoop(ifStill:_:)`` handing `value` (what the work off the loop found) to `body`, which then need
    /// capture only `self`: no closure context of its own, one in all, where capturing `value` would
    /// make two. For work done per datagram.
    @discardableResult
    func onLoop<Value: Sendable>(ifStill generation: UInt32, passing value: Value,
                                 _ body: @escaping @Sendable (Value) -> Void) -> Bool {
        onLoop { [self] in
            if isCurrent(generation) { body(value) }
        }
    }

    /// Files a timer for `deadline` (monotonic ns) whose `body` runs only if the engine still serves the
    /// generation of now. Loop only.
    func scheduleIfStillCurrent(at deadline: UInt64, file: StaticString = #fileID, line: UInt = #line,
                                _ body: @escaping () -> Void) -> TimerID {
        let generation = self.generation
        return eventLoop.scheduleOnLoop(at: deadline, { [self] in
            if isCurrent(generation) { body() }
        }, file: file, line: line)
    }

    /// Queues `body` for the loop's next iteration, to run only if the engine still serves the generation
    /// of now. Loop only.
    func executeIfStillCurrent(file: StaticString = #fileID, line: UInt = #line, _ body: @escaping () -> Void) {
        let generation = self.generation
        eventLoop.executeOnLoop({ [self] in
            if isCurrent(generation) { body() }
        }, file: file, line: line)
    }

    /// Runs `work` on a Dispatch global queue (it blocks, as a name look-up with `getaddrinfo` does), then
    /// `body` with its answer on the loop if the engine still serves the generation of now. Loop only.
    func offLoop<Answer>(_ work: @escaping @Sendable () -> Answer,
                         thenIfStillCurrent body: @escaping @Sendable (Answer) -> Void) {
        let generation = self.generation
        DispatchQueue.global().async { [self] in
            // The answer goes from this queue to the loop once, and nothing else holds it.
            onLoop(ifStill: generation, passing: UncheckedSendable(work())) { answer in body(answer.value) }
        }
    }
}
