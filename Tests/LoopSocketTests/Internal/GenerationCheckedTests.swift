import Dispatch
import EpollLoop
import XCTest

@testable import LoopSocket

/// `GenerationChecked`: each way back to the loop runs its work while the engine's generation is the one
/// the work was stamped with, and drops it once the generation has moved on (the socket closed, or was
/// claimed again), whichever thread the work comes back from.
final class GenerationCheckedTests: SocketTestCase {
    /// An engine reduced to its generation; the loop moves it on, as a close or a new claim does.
    final class Stamped: GenerationChecked, @unchecked Sendable {
        let eventLoop: EventLoop
        var cachedContext: LoopContext?
        var generation: UInt32 {
            get {
                onRead?.fire()
                return stored
            }
            set { stored = newValue }
        }
        private var stored: UInt32 = 0
        /// Fired at each read of the generation, once set (loop only).
        var onRead: Signal?
        /// What ran, in order (loop only).
        var ran: [String] = []

        init(_ loop: EventLoop) { eventLoop = loop }
    }

    func testOnLoopRunsWhileCurrentAndDropsStaleWork() throws {
        let engine = Stamped(loop)
        let stamp = try onLoop(loop) { engine.generation }
        // From another thread: queued, then checked on the loop.
        engine.onLoop(ifStill: stamp) { engine.ran.append("current") }
        try onLoop(loop) { engine.generation &+= 1 }
        engine.onLoop(ifStill: stamp) { engine.ran.append("stale") }
        engine.onLoop(ifStill: stamp, passing: 7) { engine.ran.append("stale \($0)") }
        engine.onLoop(ifStill: stamp &+ 1, passing: 8) { engine.ran.append("current \($0)") }
        settle(loop)
        XCTAssertEqual(try onLoop(loop) { engine.ran }, ["current", "current 8"])
    }

    func testOnLoopOnTheLoopRunsAtOnce() throws {
        let engine = Stamped(loop)
        let ran = try onLoop(loop) { () -> [String] in
            engine.onLoop(ifStill: engine.generation) { engine.ran.append("inline") }
            engine.ran.append("after")
            return engine.ran
        }
        XCTAssertEqual(ran, ["inline", "after"], "on the loop, the body runs inside the call, as onLoop's does")
    }

    func testTimerAndNextIterationWorkIsDroppedOnceTheGenerationMovesOn() throws {
        let engine = Stamped(loop)
        let done = Signal()
        try onLoop(loop) {
            let now = Deadline.now().uptimeNanoseconds
            _ = engine.scheduleIfStillCurrent(at: now) { engine.ran.append("stale timer") }
            engine.executeIfStillCurrent { engine.ran.append("stale task") }
            engine.generation &+= 1
            _ = engine.scheduleIfStillCurrent(at: now) { engine.ran.append("timer") }
            engine.executeIfStillCurrent { engine.ran.append("task") }
            // Later than both timers, so it runs after them whatever the order of equal deadlines.
            _ = engine.eventLoop.scheduleOnLoop(at: now &+ 20_000_000) { done.fire() }
        }
        XCTAssertTrue(done.wait())
        XCTAssertEqual(Set(try onLoop(loop) { engine.ran }), ["timer", "task"])
    }

    func testOffLoopAnswerIsDroppedWhenTheGenerationMovedOnMeanwhile() throws {
        let engine = Stamped(loop)
        let release = DispatchSemaphore(value: 0)
        let answered = Signal()
        try onLoop(loop) {
            engine.offLoop({ () -> Int in
                release.wait()
                return 1
            }) { engine.ran.append("stale \($0)") }
            engine.generation &+= 1
            engine.offLoop({ 2 }) {
                engine.ran.append("current \($0)")
                answered.fire()
            }
        }
        XCTAssertTrue(answered.wait())
        // Let the first answer come back; its check is the only read of the generation left, and whatever
        // it decides runs in the same task, before the next one queued.
        let checked = Signal()
        try onLoop(loop) { engine.onRead = checked }
        release.signal()
        XCTAssertTrue(checked.wait())
        XCTAssertEqual(try onLoop(loop) { engine.ran }, ["current 2"])
    }
}
