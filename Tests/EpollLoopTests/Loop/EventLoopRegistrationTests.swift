import Dispatch
import Glibc
import XCTest

@testable import EpollLoop

/// Registering descriptors: readiness, interest changes, deregistration, closing, stale events, fd ownership.
final class EventLoopRegistrationTests: LoopTestCase {
    override class var loopName: String { "io-loop" }
    private var faults: FaultInjection.Scope!

    override func setUpWithError() throws {
        faults = FaultInjection.Scope()
        try super.setUpWithError()
    }

    override func tearDownWithError() throws {
        faults.end()
        try super.tearDownWithError()
    }

    /// A few round trips through the loop, each at least one full iteration with an `epoll_wait`.
    private func spinLoop(_ times: Int = 3) throws {
        for _ in 0..<times { _ = try onLoop(loop) { () } }
    }

    func testReadinessIsDelivered() throws {
        let loop = self.loop
        let pipe = try makePipe()
        defer { close(pipe.write) }
        let received = Locked<[UInt8]>([])
        let events = Locked<[IOEvents]>([])
        let gotData = DispatchSemaphore(value: 0)
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { ready in
                events.withLock { $0.append(ready) }
                var buffer = [UInt8](repeating: 0, count: 16)
                let n = buffer.withUnsafeMutableBytes { read(pipe.read, $0.baseAddress, $0.count) }
                if n > 0 {
                    received.withLock { $0 += buffer[0..<n] }
                    gotData.signal()
                }
            })
            XCTAssertEqual(loop.interest(of: pipe.read), .readable)
            XCTAssertEqual(loop.registeredDescriptorCount, 1)
        }
        XCTAssertEqual(writeBytes(pipe.write, count: 3, value: 7), 3)
        try gotData.waitOrThrow("the first bytes")
        XCTAssertEqual(writeBytes(pipe.write, count: 1, value: 9), 1)
        try gotData.waitOrThrow("the second bytes")
        XCTAssertEqual(received.value, [7, 7, 7, 9])
        XCTAssertTrue(events.value.allSatisfy { $0.contains(.readable) })
    }

    func testHangupIsReportedWithoutInterest() throws {
        let loop = self.loop
        let pipe = try makePipe()
        let hangup = DispatchSemaphore(value: 0)
        let seen = Locked<IOEvents>([])
        try onLoop(loop) {
            // No interest at all: EPOLLHUP is still reported.
            try loop.register(fd: pipe.read, interest: [], handler: ClosureHandler { ready in
                seen.value = ready
                try? loop.close(fd: pipe.read)  // level-triggered: stop the repeats
                hangup.signal()
            })
        }
        close(pipe.write)
        try hangup.waitOrThrow("EPOLLHUP")
        XCTAssertTrue(seen.value.contains(.hangup))
        XCTAssertFalse(seen.value.contains(.readable))
        XCTAssertTrue(isClosed(pipe.read))
    }

    /// `reassign` moves a registration to another handler with one interest change: the old handler hears
    /// nothing more, the new one gets the readiness, and the descriptor stays registered throughout.
    func testReassignHandsReadinessToTheNewHandler() throws {
        let loop = self.loop
        let pipe = try makePipe()
        defer { close(pipe.write) }
        let oldCalls = Locked(0)
        let gotData = DispatchSemaphore(value: 0)
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: [], handler: ClosureHandler { _ in oldCalls.withLock { $0 += 1 } })
            try loop.reassign(fd: pipe.read, interest: .readable, handler: IOEventHandlerBox(ClosureHandler { ready in
                XCTAssertTrue(ready.contains(.readable))
                try? loop.close(fd: pipe.read)
                gotData.signal()
            }))
            XCTAssertEqual(loop.interest(of: pipe.read), .readable)
            XCTAssertEqual(loop.registeredDescriptorCount, 1)
        }
        XCTAssertEqual(writeBytes(pipe.write, count: 1, value: 1), 1)
        try gotData.waitOrThrow("readiness at the new handler")
        XCTAssertEqual(oldCalls.value, 0)
        XCTAssertTrue(isClosed(pipe.read))
        XCTAssertThrowsError(try onLoop(loop) {
            try loop.reassign(fd: pipe.read, interest: .readable, handler: IOEventHandlerBox(ClosureHandler { _ in }))
        })
    }

    func testSetInterest() throws {
        let loop = self.loop
        let pipe = try makePipe()
        defer { close(pipe.read) }
        let calls = Locked(0)
        let firstCall = DispatchSemaphore(value: 0)
        try onLoop(loop) {
            // A pipe's write end is always writable: level-triggered, it would report in every iteration.
            try loop.register(fd: pipe.write, interest: .writable, handler: ClosureHandler { ready in
                XCTAssertTrue(ready.contains(.writable))
                calls.withLock { $0 += 1 }
                try? loop.setInterest([], fd: pipe.write)
                firstCall.signal()
            })
        }
        try firstCall.waitOrThrow("the first writable event")
        try spinLoop()
        XCTAssertEqual(calls.value, 1, "events kept coming after setInterest([])")
        XCTAssertEqual(try onLoop(loop) { loop.interest(of: pipe.write) }, [])
        // Back on: reported again (once, since the handler turns it off again).
        try onLoop(loop) { try loop.setInterest(.writable, fd: pipe.write) }
        try firstCall.waitOrThrow("the writable event after re-enabling")
        try spinLoop()
        XCTAssertEqual(calls.value, 2)
        try onLoop(loop) { try loop.close(fd: pipe.write) }
    }

    func testSetInterestToTheSameValueMakesNoSystemCall() throws {
        let loop = self.loop
        let faults = self.faults!
        let pipe = try makePipe()
        defer { close(pipe.write) }
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { _ in })
            // Any epoll_ctl on this fd would now fail.
            faults.inject(.noMemory, into: .epollCtl, count: 1, on: .descriptor(pipe.read))
            try loop.setInterest(.readable, fd: pipe.read)
            XCTAssertEqual(faults.pendingFailures, 1, "setInterest called epoll_ctl for no change")
            XCTAssertThrowsError(try loop.setInterest([.readable, .readHangup], fd: pipe.read)) { error in
                XCTAssertEqual(error as? EventLoopError, .system(SyscallError(.epollCtl, errno: .noMemory)))
            }
            XCTAssertEqual(loop.interest(of: pipe.read), .readable, "a failed change keeps the old interest")
            try loop.close(fd: pipe.read)
        }
    }

    func testDeregisterHandsTheDescriptorBackOpen() throws {
        let loop = self.loop
        let pipe = try makePipe()
        defer {
            close(pipe.read)
            close(pipe.write)
        }
        let calls = Locked(0)
        let handler = DispatchSemaphore(value: 0)
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { _ in
                calls.withLock { $0 += 1 }
                try? loop.deregister(fd: pipe.read)  // the data stays unread
                handler.signal()
            })
        }
        writeBytes(pipe.write)
        try handler.waitOrThrow("the readable event")
        try spinLoop()
        XCTAssertEqual(calls.value, 1, "events delivered after deregister")
        XCTAssertTrue(isOpen(pipe.read))
        XCTAssertEqual(readAvailable(pipe.read), 1, "the descriptor still works")
        XCTAssertEqual(try onLoop(loop) { loop.registeredDescriptorCount }, 0)
        XCTAssertNil(try onLoop(loop) { loop.interest(of: pipe.read) })
        // It can be registered again.
        writeBytes(pipe.write)
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { _ in
                calls.withLock { $0 += 1 }
                try? loop.deregister(fd: pipe.read)
                handler.signal()
            })
        }
        try handler.waitOrThrow("the readable event after re-registering")
        XCTAssertEqual(calls.value, 2)
    }

    func testCloseClosesExactlyOnce() throws {
        let loop = self.loop
        let pipe = try makePipe()
        defer { close(pipe.write) }
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { _ in })
            try loop.close(fd: pipe.read)
            XCTAssertEqual(loop.registeredDescriptorCount, 0)
        }
        XCTAssertTrue(isClosed(pipe.read))
        // The number is reused by a descriptor the loop does not own; nothing the loop does may close it.
        try occupy(pipe.read)
        XCTAssertThrowsError(try onLoop(loop) { try loop.close(fd: pipe.read) }) { error in
            XCTAssertEqual(error as? EventLoopError, .notRegistered(fd: pipe.read))
        }
        try runner.stop()
        runner = nil
        XCTAssertTrue(isOpen(pipe.read), "the loop closed a descriptor number a second time")
        close(pipe.read)
    }

    func testRegistrationErrors() throws {
        let loop = self.loop
        let pipe = try makePipe()
        defer { close(pipe.write) }
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { _ in })
            XCTAssertThrowsError(try loop.register(fd: pipe.read, interest: .writable, handler: ClosureHandler { _ in })) {
                XCTAssertEqual($0 as? EventLoopError, .alreadyRegistered(fd: pipe.read))
            }
            XCTAssertEqual(loop.interest(of: pipe.read), .readable, "the failed registration changed nothing")
            XCTAssertThrowsError(try loop.setInterest(.readable, fd: pipe.write)) {
                XCTAssertEqual($0 as? EventLoopError, .notRegistered(fd: pipe.write))
            }
            XCTAssertThrowsError(try loop.deregister(fd: pipe.write)) {
                XCTAssertEqual($0 as? EventLoopError, .notRegistered(fd: pipe.write))
            }
            XCTAssertThrowsError(try loop.close(fd: pipe.write)) {
                XCTAssertEqual($0 as? EventLoopError, .notRegistered(fd: pipe.write))
            }
            XCTAssertThrowsError(try loop.deregister(fd: 1_000_000)) {
                XCTAssertEqual($0 as? EventLoopError, .notRegistered(fd: 1_000_000))
            }
            XCTAssertThrowsError(try loop.register(fd: -1, interest: .readable, handler: ClosureHandler { _ in })) {
                XCTAssertEqual($0 as? EventLoopError, .system(SyscallError(.epollCtl, errno: .badFileDescriptor)))
            }
            XCTAssertEqual(loop.registeredDescriptorCount, 1)
            try loop.close(fd: pipe.read)
        }
        XCTAssertTrue(isOpen(pipe.write), "errors about an unregistered descriptor must not close it")
    }

    func testFailedRegistrationLeavesNoTrace() throws {
        let loop = self.loop
        let pipe = try makePipe()
        defer {
            close(pipe.read)
            close(pipe.write)
        }
        let faults = self.faults!
        try onLoop(loop) {
            faults.inject(.noMemory, into: .epollCtl, count: 1, on: .descriptor(pipe.read))
            XCTAssertThrowsError(try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { _ in })) {
                XCTAssertEqual($0 as? EventLoopError, .system(SyscallError(.epollCtl, errno: .noMemory)))
            }
            XCTAssertEqual(loop.registeredDescriptorCount, 0)
            XCTAssertNil(loop.interest(of: pipe.read))
        }
        XCTAssertTrue(isOpen(pipe.read), "the caller still owns a descriptor whose registration failed")
        // It registers fine afterwards and events reach the new handler.
        let ready = DispatchSemaphore(value: 0)
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { _ in
                try? loop.deregister(fd: pipe.read)
                ready.signal()
            })
        }
        writeBytes(pipe.write)
        try ready.waitOrThrow("an event after a failed registration")
    }

    // MARK: Stale events

    /// Which handler saw an event, and in which loop iteration.
    private struct Call: Sendable, Equatable {
        var handler: String
        var iteration: UInt64
    }

    /// Both pipes readable before the wait come back from one `epoll_wait`, so their handlers run in the same
    /// iteration (the control for the stale-event test below). Work a handler queues on its own loop (a
    /// closure, or the job of a task its event resumed) runs right after that handler, before the next event
    /// of the batch is dispatched.
    func testTwoReadyDescriptorsAreDispatchedInTheSameBatch() throws {
        let loop = self.loop
        let a = try makePipe()
        let b = try makePipe()
        defer { [a.write, b.write].forEach { close($0) } }
        let calls = Locked<[Call]>([])
        let both = DispatchSemaphore(value: 0)
        writeBytes(a.write)
        writeBytes(b.write)
        try onLoop(loop) {
            for (name, fd) in [("a", a.read), ("b", b.read)] {
                try loop.register(fd: fd, interest: .readable, handler: ClosureHandler { _ in
                    calls.withLock { $0.append(Call(handler: name, iteration: loop.iterations)) }
                    try? loop.close(fd: fd)
                    loop.executeOnLoop {
                        calls.withLock { $0.append(Call(handler: name + " work", iteration: loop.iterations)) }
                        both.signal()
                    }
                })
            }
        }
        try both.waitOrThrow("handler 1")
        try both.waitOrThrow("handler 2")
        let seen = calls.value
        XCTAssertEqual(seen.count, 4)
        XCTAssertEqual(Set(seen.map(\.iteration)).count, 1, "not one batch; the stale-event test would prove nothing: \(seen)")
        let first = try XCTUnwrap(seen.first).handler
        XCTAssertTrue(first == "a" || first == "b")
        let second = first == "a" ? "b" : "a"
        XCTAssertEqual(seen.map(\.handler), [first, first + " work", second, second + " work"])
    }

    func testStaleEventForADescriptorClosedAndReusedInTheSameBatchIsDropped() throws {
        let loop = self.loop
        let a = try makePipe()
        let b = try makePipe()
        defer { [a.write, b.write].forEach { close($0) } }
        let calls = Locked<[Call]>([])
        let replacement = Locked<(read: Int32, write: Int32)?>(nil)
        let firstDone = DispatchSemaphore(value: 0)
        let freshCalled = DispatchSemaphore(value: 0)
        writeBytes(a.write)
        writeBytes(b.write)
        try onLoop(loop) {
            let fds = ["a": a.read, "b": b.read]
            for name in ["a", "b"] {
                let mine = fds[name]!
                let other = fds[name == "a" ? "b" : "a"]!
                try loop.register(fd: mine, interest: .readable, handler: ClosureHandler { _ in
                    calls.withLock { $0.append(Call(handler: name, iteration: loop.iterations)) }
                    // Whichever runs first closes the other, whose event is already in this batch, and puts a
                    // new readable pipe at the same descriptor number with a new handler.
                    guard calls.withLock({ $0.count }) == 1, let fresh = try? makePipe() else { return }
                    try? loop.close(fd: other)
                    dup2(fresh.read, other)
                    close(fresh.read)
                    try? loop.close(fd: mine)
                    writeBytes(fresh.write)
                    replacement.value = (other, fresh.write)
                    try? loop.register(fd: other, interest: .readable, handler: ClosureHandler { _ in
                        calls.withLock { $0.append(Call(handler: "fresh", iteration: loop.iterations)) }
                        try? loop.close(fd: other)
                        freshCalled.signal()
                    })
                    firstDone.signal()
                })
            }
        }
        try firstDone.waitOrThrow("the first handler")
        try freshCalled.waitOrThrow("the new registration's own event")
        try spinLoop()
        let seen = calls.value
        let pair = try XCTUnwrap(replacement.value)
        defer { close(pair.write) }
        XCTAssertEqual(seen.count, 2, "calls: \(seen)")
        XCTAssertEqual(seen.filter { $0.handler == "a" || $0.handler == "b" }.count, 1,
                       "the closed descriptor's old handler was called: \(seen)")
        XCTAssertEqual(seen.last?.handler, "fresh")
        XCTAssertGreaterThan(seen.last!.iteration, seen.first!.iteration,
                             "the stale event reached the new registration in the old batch: \(seen)")
        XCTAssertTrue(isClosed(pair.read))
    }

    // MARK: Descriptor ownership over a loop's lifetime

    func testEveryDescriptorIsClosedAtTheEndOfALoopsLife() throws {
        try runner.stop()  // measure from a clean slate
        runner = nil
        let before = openDescriptorCount()
        var writeEnds: [Int32] = []
        var readEnds: [Int32] = []
        do {
            let lifetime = try ThreadedLoop(name: "fd-lifetime")
            XCTAssertEqual(openDescriptorCount(), before + 2, "a loop owns an epoll fd and an eventfd")
            lifetime.start()
            let loop = lifetime.loop
            for _ in 0..<4 {
                let pipe = try makePipe()
                readEnds.append(pipe.read)
                writeEnds.append(pipe.write)
            }
            let ends = readEnds
            try onLoop(loop) {
                for (i, fd) in ends.enumerated() {
                    try loop.register(fd: fd, interest: .readable, handler: ClosureHandler(onShutdown: {
                        // Handler 0 closes its own descriptor; the loop must not close it again.
                        if i == 0 {
                            try? loop.close(fd: fd)
                            try? occupy(fd)
                        }
                    }, onIO: { _ in }))
                }
                try loop.close(fd: ends[1])  // closed early
                try occupy(ends[1])
            }
            try lifetime.stop()
        }
        XCTAssertTrue(isOpen(readEnds[0]), "descriptor closed twice (after loopWillShutDown closed it)")
        XCTAssertTrue(isOpen(readEnds[1]), "descriptor closed twice (after close(fd:))")
        XCTAssertTrue(isClosed(readEnds[2]), "registered descriptor left open at shutdown")
        XCTAssertTrue(isClosed(readEnds[3]), "registered descriptor left open at shutdown")
        close(readEnds[0])
        close(readEnds[1])
        writeEnds.forEach { close($0) }
        XCTAssertEqual(openDescriptorCount(), before, "descriptors leaked by the loop")
    }

    /// The loop dispatches without retaining the handler: one that closes its own descriptor, held by nothing
    /// but the loop, is still alive when `close` returns inside its `handleIO`, and is released after.
    func testAHandlerThatClosesItselfLivesUntilItsCallReturns() throws {
        let loop = self.loop
        let pipe = try makePipe()
        defer { close(pipe.write) }
        let probe = LifetimeProbe()
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: .readable,
                              handler: SelfClosingHandler(loop: loop, fd: pipe.read, probe: probe))
        }
        XCTAssertEqual(writeBytes(pipe.write, count: 1, value: 1), 1)
        try probe.called.waitOrThrow("the readable event")
        try probe.released.waitOrThrow("the handler's release after its call")
        XCTAssertEqual(probe.aliveAfterClose.value, true, "released inside its own call")
        XCTAssertTrue(isClosed(pipe.read))
    }

    /// A released handler's deinit may close another registered descriptor, whose handler the loop then drops
    /// while releasing: both are released, and the loop goes on.
    func testADeinitThatClosesAnotherDescriptorReleasesBoth() throws {
        let loop = self.loop
        let first = try makePipe()
        let second = try makePipe()
        defer { close(first.write); close(second.write) }
        let probe = LifetimeProbe()
        let other = LifetimeProbe()
        try onLoop(loop) {
            try loop.register(fd: second.read, interest: [], handler: SelfClosingHandler(
                loop: loop, fd: second.read, probe: other))
            try loop.register(fd: first.read, interest: .readable, handler: SelfClosingHandler(
                loop: loop, fd: first.read, probe: probe, closingOnDeinit: second.read))
        }
        XCTAssertEqual(writeBytes(first.write, count: 1, value: 1), 1)
        try probe.released.waitOrThrow("the first handler's release")
        try other.released.waitOrThrow("the second handler's release, dropped by the first one's deinit")
        XCTAssertTrue(isClosed(first.read))
        XCTAssertTrue(isClosed(second.read))
        XCTAssertEqual(try onLoop(loop) { loop.registeredDescriptorCount }, 0)
    }

    func testManyLoopLifetimesLeakNoDescriptors() throws {
        try runner.stop()
        runner = nil
        let before = openDescriptorCount()
        for i in 0..<20 {
            let lifetime = try ThreadedLoop(name: "fd-churn-\(i)")
            lifetime.start()
            let loop = lifetime.loop
            try onLoop(loop) {
                for _ in 0..<3 {
                    let pipe = try makePipe()
                    try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { _ in })
                    try loop.register(fd: pipe.write, interest: [], handler: ClosureHandler { _ in })
                }
            }
            try lifetime.stop()
        }
        // Loops that never ran, shut down or simply dropped.
        for _ in 0..<5 {
            let idle = try EventLoop(name: "idle")
            try idle.shutdownGracefully(timeout: .seconds(10))
        }
        for _ in 0..<5 {
            _ = try EventLoop(name: "dropped")
        }
        XCTAssertEqual(openDescriptorCount(), before)
    }
}

/// What a ``SelfClosingHandler`` reports: its call, whether it was alive after closing itself, its deinit.
private final class LifetimeProbe: Sendable {
    let called = DispatchSemaphore(value: 0)
    let released = DispatchSemaphore(value: 0)
    let deinitRan = Locked(false)
    let aliveAfterClose = Locked<Bool?>(nil)
}

/// Closes its own descriptor on its first event; its deinit may close another registered one.
private final class SelfClosingHandler: LoopIOHandler {
    let loop: EventLoop
    let fd: Int32
    let probe: LifetimeProbe
    let closingOnDeinit: Int32?

    init(loop: EventLoop, fd: Int32, probe: LifetimeProbe, closingOnDeinit: Int32? = nil) {
        self.loop = loop
        self.fd = fd
        self.probe = probe
        self.closingOnDeinit = closingOnDeinit
    }

    func handleIO(_ events: IOEvents) {
        try? loop.close(fd: fd)
        probe.aliveAfterClose.value = !probe.deinitRan.value
        probe.called.signal()
    }

    deinit {
        probe.deinitRan.value = true
        if let closingOnDeinit { try? loop.close(fd: closingOnDeinit) }
        probe.released.signal()
    }
}
