import XCTest

@testable import EpollLoop

/// A test case whose every test gets a new loop running on a thread of its own, stopped after the test.
class LoopTestCase: XCTestCase {
    /// The name of the loop (and its thread).
    class var loopName: String { "test-loop" }

    var runner: ThreadedLoop!

    var loop: EventLoop { runner.loop }

    override func setUpWithError() throws {
        try super.setUpWithError()
        runner = try ThreadedLoop(name: Self.loopName)
        runner.start()
    }

    override func tearDownWithError() throws {
        try runner?.stop()
        runner = nil
        try super.tearDownWithError()
    }

    /// Waits until the work queued so far has been published: the loop publishes its metrics at the start of
    /// each iteration, so once a task queued after it has run, the iteration that ran the earlier work is in.
    func settle() throws {
        _ = try onLoop(loop) {}
        _ = try onLoop(loop) {}
    }
}
