import Dispatch
import Glibc
import XCTest

@testable import EpollLoop

/// Failures injected through the syscall seam: `EINTR` retried, `EAGAIN` as a value, the rest thrown, the
/// loop surviving what it should survive, and each scope's rules failing only the calls they name.
final class FaultInjectionTests: XCTestCase {
    private var toClose: [Int32] = []
    private var faults: FaultInjection.Scope!

    override func setUp() {
        faults = FaultInjection.Scope()
    }

    override func tearDown() {
        faults.end()
        toClose.forEach { close($0) }
        toClose = []
    }

    private func pipe() throws -> (read: Int32, write: Int32) {
        let p = try makePipe()
        toClose += [p.read, p.write]
        return p
    }

    private func readOne(_ fd: Int32) throws -> IOResult<Int> {
        var byte: UInt8 = 0
        return try withUnsafeMutableBytes(of: &byte) { try Syscall.read(fd, $0) }
    }

    private func writeOne(_ fd: Int32) throws -> IOResult<Int> {
        let byte: UInt8 = 1
        return try withUnsafeBytes(of: byte) { try Syscall.write(fd, $0) }
    }

    func testEINTRIsRetriedTransparently() throws {
        let p = try pipe()
        writeBytes(p.write)
        faults.inject(.interrupted, into: .read, count: 3, on: .descriptor(p.read))
        XCTAssertEqual(faults.pendingFailures, 3)
        XCTAssertEqual(try readOne(p.read), .processed(1))
        XCTAssertEqual(faults.pendingFailures, 0, "each EINTR was consumed by a retry")
        faults.inject(.interrupted, into: .write, count: 2, on: .descriptor(p.write))
        XCTAssertEqual(try writeOne(p.write), .processed(1))
        XCTAssertEqual(faults.pendingFailures, 0)
        XCTAssertEqual(try readOne(p.read), .processed(1), "the retried write happened exactly once")
        XCTAssertEqual(try readOne(p.read), .wouldBlock)
    }

    func testEAGAINBecomesWouldBlock() throws {
        let p = try pipe()
        writeBytes(p.write)
        faults.inject(.wouldBlock, into: .read, count: 2, on: .descriptor(p.read))
        XCTAssertEqual(try readOne(p.read), .wouldBlock, "even with data available")
        XCTAssertEqual(try readOne(p.read), .wouldBlock)
        XCTAssertEqual(try readOne(p.read), .processed(1))
        XCTAssertEqual(faults.pendingFailures, 0)
        faults.inject(.wouldBlock, into: .write, on: .descriptor(p.write))
        XCTAssertEqual(try writeOne(p.write), .wouldBlock)
    }

    func testOtherErrorsAreThrownWithCallAndErrno() throws {
        faults.inject(.tooManyOpenFiles, into: .pipe, on: .thisThread)
        XCTAssertThrowsError(try Syscall.pipe()) {
            XCTAssertEqual($0 as? SyscallError, SyscallError(.pipe, errno: .tooManyOpenFiles))
        }
        let p = try pipe()  // the rule is used up
        faults.inject(.noBufferSpace, into: .write, count: 2, on: .descriptor(p.write))
        for _ in 0..<2 {
            XCTAssertThrowsError(try writeOne(p.write)) {
                let error = $0 as? SyscallError
                XCTAssertEqual(error?.call, .write)
                XCTAssertEqual(error?.errno, .noBufferSpace)
                XCTAssertEqual(error?.errno.rawValue, ENOBUFS)
            }
        }
        XCTAssertEqual(try writeOne(p.write), .processed(1), "fails exactly `count` times")
        XCTAssertEqual(try readOne(p.read), .processed(1), "the failed writes wrote nothing")
        faults.inject(.tooManyOpenFiles, into: .epollCreate, on: .thisThread)
        XCTAssertThrowsError(try Syscall.epollCreate()) {
            XCTAssertEqual($0 as? SyscallError, SyscallError(.epollCreate, errno: .tooManyOpenFiles))
        }
    }

    func testRulesAreScopedToTheirDescriptorAndCall() throws {
        let a = try pipe()
        let b = try pipe()
        writeBytes(a.write)
        writeBytes(b.write)
        faults.inject(.noMemory, into: .read, on: .descriptor(a.read))
        XCTAssertEqual(try readOne(b.read), .processed(1), "another descriptor")
        XCTAssertEqual(try writeOne(a.write), .processed(1), "another call")
        XCTAssertEqual(faults.pendingFailures, 1)
        XCTAssertThrowsError(try readOne(a.read))
        XCTAssertEqual(faults.failuresInjected, 1)
        faults.inject(.noMemory, into: .read, count: 5, on: .thisThread)
        faults.end()
        XCTAssertEqual(faults.pendingFailures, 0)
        XCTAssertEqual(try readOne(a.read), .processed(1))
    }

    /// A loop's rule fails calls made on the loop's thread, whatever their descriptor, and none made elsewhere;
    /// a thread's rule fails calls made on that thread only.
    func testLoopAndThreadRulesFailOnlyCallsMadeThere() throws {
        let runner = try ThreadedLoop(name: "fault-target")
        runner.start()
        defer { XCTAssertNoThrow(try runner.stop()) }
        let loop = runner.loop
        let faults = self.faults!
        faults.inject(.tooManyOpenFiles, into: .pipe, on: .loop(loop))
        let here: (read: Int32, write: Int32)
        do { here = try pipe() } catch { return XCTFail("a call on the test's thread took the loop's rule: \(error)") }
        let onTheLoop = try onLoop(loop) { pipeFailures(1) }
        XCTAssertEqual(onTheLoop, [SyscallError(.pipe, errno: .tooManyOpenFiles)])
        faults.inject(.noMemory, into: .read, on: .thisThread)
        writeBytes(here.write)
        let fromTheLoop = try onLoop(loop) { () -> Bool in
            var byte: UInt8 = 0
            return (try? withUnsafeMutableBytes(of: &byte) { try Syscall.read(here.read, $0) }) == .processed(1)
        }
        XCTAssertTrue(fromTheLoop, "a call on the loop consumed the test thread's rule")
        XCTAssertThrowsError(try readOne(here.read)) {
            XCTAssertEqual($0 as? SyscallError, SyscallError(.read, errno: .noMemory))
        }
    }

    /// The seam's `close` ends every rule on that descriptor: the number is free for anyone to be given, and
    /// whoever is given it next sees none of them.
    func testClosingADescriptorEndsItsRules() throws {
        let (r, w) = try makePipe()
        toClose.append(w)
        faults.inject(.noMemory, into: .read, count: 3, on: .descriptor(r))
        faults.inject(.noMemory, into: .recv, on: .descriptor(r))
        XCTAssertNoThrow(try Syscall.close(r))
        XCTAssertEqual(faults.pendingFailures, 0)
        let (reused, writer) = try pipe()
        XCTAssertEqual(reused, r, "the kernel hands out the lowest free number")
        writeBytes(writer)
        XCTAssertEqual(try readOne(reused), .processed(1))
        XCTAssertEqual(faults.failuresInjected, 0)
    }

    /// Two scopes active at once, as two tests running at the same time would hold them, on their own threads,
    /// with rules for the same calls (on their own descriptor, their own thread, their own loop) but different
    /// errnos: each sees exactly its own failures, never the other's, and calls of neither (the test's own
    /// thread, a descriptor neither names) see none.
    func testTwoScopesAtOnceEachSeeOnlyTheirOwnFailures() throws {
        struct Outcome: Sendable {
            var failures: [SyscallError] = []
            var error: String?
            var pending = -1
            var injected = -1
        }
        let errnos: [Errno] = [.noMemory, .noBufferSpace]
        let outcomes = Locked([Outcome](repeating: Outcome(), count: errnos.count))
        let (injected, go, consumed) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let (finish, finished) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        for (party, errno) in errnos.enumerated() {
            Thread {
                let scope = FaultInjection.Scope()
                var outcome = Outcome()
                var armed = false
                do {
                    let runner = try ThreadedLoop(name: "scope-\(party)")
                    runner.start()
                    defer { try? runner.stop() }
                    let (r, w) = try Syscall.pipe()
                    defer { close(r); close(w) }
                    writeBytes(w)
                    scope.inject(errno, into: .read, count: 2, on: .descriptor(r))
                    scope.inject(errno, into: .pipe, on: .thisThread)
                    scope.inject(errno, into: .pipe, on: .loop(runner.loop))
                    armed = true
                    injected.signal()
                    if go.wait(timeout: .now() + testTimeout) == .timedOut { throw TestTimeout(what: "the start") }
                    // Every rule of both scopes is in place now; this party makes each call twice as often
                    // as its own rules fail it, so it would take the other's too if it could.
                    for _ in 0..<4 {
                        if let failure = readFailure(r) { outcome.failures.append(failure) }
                    }
                    outcome.failures += pipeFailures(2)
                    outcome.failures += try onLoop(runner.loop) { pipeFailures(2) }
                } catch {
                    outcome.error = "\(error)"
                }
                if !armed { injected.signal() }
                outcome.pending = scope.pendingFailures
                outcome.injected = scope.failuresInjected
                outcomes.withLock { [outcome] in $0[party] = outcome }
                consumed.signal()
                _ = finish.wait(timeout: .now() + testTimeout)  // both scopes stay active until both are done
                scope.end()
                finished.signal()
            }.start()
        }
        for _ in errnos { try injected.waitOrThrow("both scopes' rules") }
        // Calls neither scope names, while both are armed: a pipe on this thread (as both scopes' threads and
        // loops will make), and a read on a descriptor of neither.
        do {
            let stranger = try pipe()
            writeBytes(stranger.write)
            XCTAssertEqual(try readOne(stranger.read), .processed(1), "a read on no scope's descriptor took a rule")
        } catch { XCTFail("this thread's pipe took a scope's rule: \(error)") }
        for _ in errnos { go.signal() }
        for _ in errnos { try consumed.waitOrThrow("each scope's calls") }
        for _ in errnos { finish.signal() }
        for _ in errnos { try finished.waitOrThrow("each scope's thread") }
        for (party, errno) in errnos.enumerated() {
            let outcome = outcomes.value[party]
            XCTAssertNil(outcome.error, "party \(party)")
            XCTAssertEqual(
                outcome.failures, [
                    SyscallError(.read, errno: errno), SyscallError(.read, errno: errno),
                    SyscallError(.pipe, errno: errno), SyscallError(.pipe, errno: errno),
                ], "party \(party): exactly its own failures, each call where its rule named")
            XCTAssertEqual(outcome.pending, 0, "party \(party): a rule left unconsumed")
            XCTAssertEqual(outcome.injected, 4, "party \(party): failures from its rules")
        }
    }

    func testCloseIsNeverRetried() throws {
        // EINTR from close: the descriptor is gone on Linux, so close neither retries nor reports it.
        let (r, w) = try makePipe()
        toClose.append(w)
        faults.inject(.interrupted, into: .close, count: 2, on: .descriptor(r))
        XCTAssertNoThrow(try Syscall.close(r))
        XCTAssertEqual(faults.failuresInjected, 1, "close was retried")
        XCTAssertEqual(faults.pendingFailures, 0, "the rule ended with its descriptor")
        XCTAssertTrue(isClosed(r))
        // Any other failure is reported, and the descriptor is closed all the same.
        let (r2, w2) = try makePipe()
        toClose.append(w2)
        faults.inject(Errno(rawValue: EIO), into: .close, count: 2, on: .descriptor(r2))
        XCTAssertThrowsError(try Syscall.close(r2)) {
            XCTAssertEqual($0 as? SyscallError, SyscallError(.close, errno: Errno(rawValue: EIO)))
        }
        XCTAssertEqual(faults.failuresInjected, 2, "close was retried")
        XCTAssertTrue(isClosed(r2))
    }

    func testLoopCloseReportsAFailedCloseButClosesAnyway() throws {
        let runner = try ThreadedLoop(name: "close-fault")
        runner.start()
        defer { XCTAssertNoThrow(try runner.stop()) }
        let loop = runner.loop
        let (r, w) = try makePipe()
        toClose.append(w)
        let faults = self.faults!
        try onLoop(loop) {
            try loop.register(fd: r, interest: .readable, handler: ClosureHandler { _ in })
            faults.inject(Errno(rawValue: EIO), into: .close, on: .descriptor(r))
            XCTAssertThrowsError(try loop.close(fd: r)) {
                XCTAssertEqual($0 as? EventLoopError, .system(SyscallError(.close, errno: Errno(rawValue: EIO))))
            }
            XCTAssertEqual(loop.registeredDescriptorCount, 0)
        }
        XCTAssertTrue(isClosed(r))
    }

    func testLoopCreationFailuresLeakNothing() throws {
        let before = openDescriptorCount()
        for (call, errno) in [(SystemCall.epollCreate, Errno.tooManyOpenFiles), (.eventfd, .tooManyOpenFiles), (.epollCtl, .noMemory)] {
            faults.inject(errno, into: call, on: .thisThread)  // a loop is created on the caller's thread
            XCTAssertThrowsError(try EventLoop(name: "doomed")) {
                XCTAssertEqual($0 as? EventLoopError, .system(SyscallError(call, errno: errno)))
            }
            XCTAssertEqual(faults.pendingFailures, 0)
            XCTAssertEqual(openDescriptorCount(), before, "descriptors leaked when \(call) failed")
        }
        faults.inject(.tooManyOpenFiles, into: .eventfd, on: .thisThread)  // and a group's loops too
        XCTAssertThrowsError(try EventLoopGroup(numberOfLoops: 1, name: "doomed-group")) {
            XCTAssertEqual($0 as? EventLoopError, .system(SyscallError(.eventfd, errno: .tooManyOpenFiles)))
        }
        XCTAssertEqual(openDescriptorCount(), before)
    }

    func testEpollWaitFailuresDoNotKillTheLoop() throws {
        let runner = try ThreadedLoop(name: "wait-fault")
        runner.start()
        defer { XCTAssertNoThrow(try runner.stop()) }
        let loop = runner.loop
        let epfd = loop.epollFD
        let iterationsBefore = try onLoop(loop) { loop.iterations }
        // EINTR is retried inside the seam; ENOMEM makes one iteration see no events.
        let faults = self.faults!
        faults.inject(.interrupted, into: .epollWait, count: 3, on: .descriptor(epfd))
        faults.inject(.noMemory, into: .epollWait, count: 5, on: .descriptor(epfd))
        // A task that re-queues itself keeps the loop polling (without blocking) until every failure is used.
        let consumed = DispatchSemaphore(value: 0)
        @Sendable func poll() {
            if faults.pendingFailures == 0 { consumed.signal() } else { loop.executeOnLoop(poll) }
        }
        try loop.execute(poll)
        try consumed.waitOrThrow("the loop to use up the injected epoll_wait failures")
        // Still alive: tasks from other threads run, timers fire, I/O is delivered.
        XCTAssertGreaterThan(try onLoop(loop) { loop.iterations }, iterationsBefore)
        let timer = DispatchSemaphore(value: 0)
        try loop.schedule(after: .milliseconds(1)) { timer.signal() }
        try timer.waitOrThrow("a timer after the failures")
        let p = try pipe()
        let readable = DispatchSemaphore(value: 0)
        try onLoop(loop) {
            try loop.register(fd: p.read, interest: .readable, handler: ClosureHandler { _ in
                try? loop.deregister(fd: p.read)
                readable.signal()
            })
        }
        writeBytes(p.write)
        try readable.waitOrThrow("I/O after the failures")
    }

    func testWakeupDrainFailuresDoNotStallTheLoop() throws {
        let runner = try ThreadedLoop(name: "drain-fault")
        runner.start()
        defer { XCTAssertNoThrow(try runner.stop()) }
        let loop = runner.loop
        _ = try onLoop(loop) { () }
        faults.inject(.noMemory, into: .eventfdRead, count: 3, on: .descriptor(loop.wakeFD))
        // Each task is submitted while the loop sleeps, so each is a wakeup through the eventfd.
        for i in 0..<10 {
            XCTAssertEqual(try onLoop(loop) { i }, i)
        }
    }
}

/// Makes `count` pipes through the seam, closing each; returns the failures.
private func pipeFailures(_ count: Int) -> [SyscallError] {
    var failures: [SyscallError] = []
    for _ in 0..<count {
        do throws(SyscallError) {
            let (r, w) = try Syscall.pipe()
            close(r)
            close(w)
        } catch { failures.append(error) }
    }
    return failures
}

/// Reads a byte from `fd` through the seam; returns the failure, if any.
private func readFailure(_ fd: Int32) -> SyscallError? {
    var byte: UInt8 = 0
    do throws(SyscallError) {
        _ = try withUnsafeMutableBytes(of: &byte) { buffer throws(SyscallError) in try Syscall.read(fd, buffer) }
        return nil
    } catch { return error }
}
