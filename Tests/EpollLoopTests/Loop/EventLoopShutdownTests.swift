import Dispatch
import Foundation
import Glibc
import XCTest

@testable import EpollLoop

/// `initiateShutdown()`, `shutdownGracefully(timeout:)` and `run()`'s lifecycle.
final class EventLoopShutdownTests: XCTestCase {
    func testShutdownRunsTasksQueuedBeforeIt() throws {
        let runner = try ThreadedLoop(name: "drain")
        runner.start()
        let loop = runner.loop
        let gate = DispatchSemaphore(value: 0)
        let blocked = DispatchSemaphore(value: 0)
        // Hold the loop in a task so that the next tasks are still queued when shutdown begins.
        try loop.execute {
            blocked.signal()
            _ = gate.wait(timeout: .now() + testTimeout)
        }
        try blocked.waitOrThrow("the loop to run the blocking task")
        let ran = Locked<[Int]>([])
        for i in 0..<100 { try loop.execute { ran.withLock { $0.append(i) } } }
        loop.initiateShutdown()
        XCTAssertTrue(loop.isShutDown)
        XCTAssertThrowsError(try loop.execute { ran.withLock { $0.append(-1) } }) {
            XCTAssertEqual($0 as? EventLoopError, .shutDown, "tasks are refused once shutdown has begun")
        }
        gate.signal()
        try loop.shutdownGracefully(timeout: .seconds(10))
        XCTAssertEqual(ran.value, Array(0..<100))
        try runner.waitForExit()
    }

    func testShutdownTimesOutWhileTheLoopIsBusyAndSucceedsLater() throws {
        let runner = try ThreadedLoop(name: "busy")
        runner.start()
        let gate = DispatchSemaphore(value: 0)
        let blocked = DispatchSemaphore(value: 0)
        try runner.loop.execute {
            blocked.signal()
            _ = gate.wait(timeout: .now() + testTimeout)
        }
        try blocked.waitOrThrow("the loop to block")
        XCTAssertThrowsError(try runner.loop.shutdownGracefully(timeout: .milliseconds(20))) {
            XCTAssertEqual($0 as? EventLoopError, .shutdownTimedOut)
        }
        gate.signal()
        try runner.stop()
    }

    func testHandlersAreToldAndRemainingDescriptorsClosed() throws {
        let runner = try ThreadedLoop(name: "close-down")
        runner.start()
        let loop = runner.loop
        var pipes: [(read: Int32, write: Int32)] = []
        for _ in 0..<3 { pipes.append(try makePipe()) }
        defer { pipes.forEach { close($0.write) } }
        let told = Locked<[Int]>([])
        let lateRegistration = Locked<EventLoopError?>(nil)
        let taskFromHandlerRan = Locked(false)
        let readEnds = pipes.map(\.read)
        try onLoop(loop) {
            for (i, fd) in readEnds.enumerated() {
                try loop.register(fd: fd, interest: .readable, handler: ClosureHandler(onShutdown: {
                    told.withLock { $0.append(i) }
                    XCTAssertTrue(loop.inEventLoop)
                    if i == 0 {
                        // Work queued while closing down still runs; new registrations are refused.
                        try? loop.execute { taskFromHandlerRan.value = true }
                        do throws(EventLoopError) {
                            try loop.register(fd: readEnds[1], interest: .readable, handler: ClosureHandler { _ in })
                        } catch {
                            lateRegistration.value = error
                        }
                    }
                    if i == 1 { try? loop.close(fd: fd) }
                }, onIO: { _ in }))
            }
        }
        try runner.stop()
        XCTAssertEqual(told.value, [0, 1, 2], "each handler is told exactly once")
        XCTAssertEqual(lateRegistration.value, .shutDown)
        XCTAssertTrue(taskFromHandlerRan.value)
        for fd in readEnds { XCTAssertTrue(isClosed(fd), "fd \(fd) left open") }
    }

    func testShutdownIsIdempotent() throws {
        let runner = try ThreadedLoop(name: "twice")
        runner.start()
        let loop = runner.loop
        _ = try onLoop(loop) { () }  // running, so that run() returns normally rather than throwing .shutDown
        loop.initiateShutdown()
        loop.initiateShutdown()
        try loop.shutdownGracefully(timeout: .seconds(10))
        try loop.shutdownGracefully(timeout: .seconds(10))
        loop.initiateShutdown()
        XCTAssertTrue(loop.isShutDown)
        try runner.waitForExit()
        XCTAssertNoThrow(try runner.runResult.value?.get(), "run() itself returns normally")
    }

    func testShutdownGracefullyOnTheLoopThrows() throws {
        let runner = try ThreadedLoop(name: "self-shutdown")
        runner.start()
        let loop = runner.loop
        let error = try onLoop(loop) { () -> EventLoopError? in
            do throws(EventLoopError) {
                try loop.shutdownGracefully(timeout: .seconds(1))
                return nil
            } catch {
                return error
            }
        }
        XCTAssertEqual(error, .calledOnLoop)
        XCTAssertFalse(loop.isShutDown, "the refused call must not start a shutdown")
        try runner.stop()
    }

    func testShutdownOfALoopThatNeverRan() throws {
        let before = openDescriptorCount()
        let loop = try EventLoop(name: "never-ran")
        let ran = Locked<[Int]>([])
        let onLoopThread = Locked(true)
        for i in 0..<10 {
            try loop.execute {
                if !loop.inEventLoop { onLoopThread.value = false }
                ran.withLock { $0.append(i) }
            }
        }
        let timerFired = Locked(false)
        try loop.schedule(after: .zero) { timerFired.value = true }
        try loop.shutdownGracefully(timeout: .seconds(10))
        XCTAssertEqual(ran.value, Array(0..<10), "queued tasks run at shutdown")
        XCTAssertTrue(onLoopThread.value, "they run with the calling thread acting as the loop")
        XCTAssertFalse(timerFired.value)
        XCTAssertFalse(loop.inEventLoop)
        XCTAssertEqual(openDescriptorCount(), before, "the epoll fd and eventfd are closed")
        XCTAssertThrowsError(try loop.run()) { XCTAssertEqual($0 as? EventLoopError, .shutDown) }
        try loop.shutdownGracefully(timeout: .seconds(10))
    }

    func testRunTwiceThrows() throws {
        let runner = try ThreadedLoop(name: "run-twice")
        runner.start()
        let loop = runner.loop
        let nested = try onLoop(loop) { () -> EventLoopError? in
            do throws(EventLoopError) {
                try loop.run()
                return nil
            } catch {
                return error
            }
        }
        XCTAssertEqual(nested, .alreadyRunning)
        try runner.stop()
        XCTAssertThrowsError(try loop.run()) {
            XCTAssertEqual($0 as? EventLoopError, .alreadyRunning, "a loop that has run cannot run again")
        }
    }

    func testEmbeddedInAThreadAndStoppedFromATask() throws {
        let runner = try ThreadedLoop(name: "embedded")
        runner.start()
        let loop = runner.loop
        try loop.execute { loop.initiateShutdown() }
        try runner.waitForExit()
        XCTAssertNoThrow(try runner.runResult.value?.get())
        XCTAssertTrue(loop.isShutDown)
    }

    func testEmbeddedInAPthreadAndStoppedFromATimer() throws {
        let loop = try EventLoop(name: "pthread-loop")
        final class Context: @unchecked Sendable {
            let loop: EventLoop
            let returned = DispatchSemaphore(value: 0)
            var result: Result<Void, EventLoopError>?
            init(loop: EventLoop) { self.loop = loop }
        }
        let context = Context(loop: loop)
        let firedOnLoop = Locked(false)
        try loop.schedule(after: .milliseconds(1)) {
            firedOnLoop.value = loop.inEventLoop
            loop.initiateShutdown()
        }
        var thread = pthread_t()
        let raw = Unmanaged.passRetained(context).toOpaque()
        XCTAssertEqual(pthread_create(&thread, nil, { raw in
            let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
            context.result = Result { () throws(EventLoopError) in try context.loop.run() }
            context.returned.signal()
            return nil
        }, raw), 0)
        try context.returned.waitOrThrow("run() to return after the timer shut the loop down")
        XCTAssertEqual(pthread_join(thread, nil), 0)
        XCTAssertNoThrow(try context.result?.get())
        XCTAssertNotNil(context.result)
        XCTAssertTrue(firedOnLoop.value)
        XCTAssertTrue(loop.isShutDown)
        try loop.shutdownGracefully(timeout: .seconds(10))  // already done: returns at once
    }

    func testEveryAcceptedTaskRunsWhileOtherThreadsRaceTheShutdown() throws {
        // Producers keep submitting (and so waking the loop) while it shuts down. Each task that execute()
        // accepted must run exactly once; each refused one never. Repeated to exercise the races between
        // a producer's wakeup write and the loop closing its eventfd.
        for round in 0..<100 {
            let runner = try ThreadedLoop(name: "race-\(round)")
            runner.start()
            let loop = runner.loop
            _ = try onLoop(loop) { () }  // running (and soon asleep), so producers' tasks wake it
            let accepted = Locked(0)
            let ran = Locked(0)
            let producers = DispatchGroup()
            let started = DispatchSemaphore(value: 0)
            for _ in 0..<2 {
                producers.enter()
                Thread {
                    started.signal()
                    while (try? loop.execute { ran.withLock { $0 += 1 } }) != nil {
                        accepted.withLock { $0 += 1 }
                    }
                    producers.leave()
                }.start()
            }
            try started.waitOrThrow("producer 1")
            try started.waitOrThrow("producer 2")
            try loop.shutdownGracefully(timeout: .seconds(10))
            XCTAssertEqual(producers.wait(timeout: .now() + testTimeout), .success)
            try runner.waitForExit()
            XCTAssertEqual(ran.value, accepted.value, "round \(round)")
        }
    }
}
