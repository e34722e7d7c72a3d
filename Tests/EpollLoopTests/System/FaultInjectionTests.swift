import Dispatch
import Glibc
import XCTest

@testable import EpollLoop

/// Failures injected through the syscall seam: `EINTR` retried, `EAGAIN` as a value, the rest thrown, and the
/// loop surviving what it should survive.
final class FaultInjectionTests: XCTestCase {
    private var toClose: [Int32] = []

    override func tearDown() {
        FaultInjection.reset()
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
        FaultInjection.inject(.interrupted, into: .read, count: 3, fd: p.read)
        XCTAssertEqual(FaultInjection.pendingFailures, 3)
        XCTAssertEqual(try readOne(p.read), .processed(1))
        XCTAssertEqual(FaultInjection.pendingFailures, 0, "each EINTR was consumed by a retry")
        FaultInjection.inject(.interrupted, into: .write, count: 2)
        XCTAssertEqual(try writeOne(p.write), .processed(1))
        XCTAssertEqual(FaultInjection.pendingFailures, 0)
        XCTAssertEqual(try readOne(p.read), .processed(1), "the retried write happened exactly once")
        XCTAssertEqual(try readOne(p.read), .wouldBlock)
    }

    func testEAGAINBecomesWouldBlock() throws {
        let p = try pipe()
        writeBytes(p.write)
        FaultInjection.inject(.wouldBlock, into: .read, count: 2, fd: p.read)
        XCTAssertEqual(try readOne(p.read), .wouldBlock, "even with data available")
        XCTAssertEqual(try readOne(p.read), .wouldBlock)
        XCTAssertEqual(try readOne(p.read), .processed(1))
        XCTAssertEqual(FaultInjection.pendingFailures, 0)
        FaultInjection.inject(.wouldBlock, into: .write)
        XCTAssertEqual(try writeOne(p.write), .wouldBlock)
    }

    func testOtherErrorsAreThrownWithCallAndErrno() throws {
        FaultInjection.inject(.tooManyOpenFiles, into: .pipe)
        XCTAssertThrowsError(try Syscall.pipe()) {
            XCTAssertEqual($0 as? SyscallError, SyscallError(.pipe, errno: .tooManyOpenFiles))
        }
        let p = try pipe()  // the rule is used up
        FaultInjection.inject(.noBufferSpace, into: .write, count: 2, fd: p.write)
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
        FaultInjection.inject(.tooManyOpenFiles, into: .epollCreate)
        XCTAssertThrowsError(try Syscall.epollCreate()) {
            XCTAssertEqual($0 as? SyscallError, SyscallError(.epollCreate, errno: .tooManyOpenFiles))
        }
    }

    func testRulesAreScopedToTheirDescriptorAndCall() throws {
        let a = try pipe()
        let b = try pipe()
        writeBytes(a.write)
        writeBytes(b.write)
        FaultInjection.inject(.noMemory, into: .read, fd: a.read)
        XCTAssertEqual(try readOne(b.read), .processed(1), "another descriptor")
        XCTAssertEqual(try writeOne(a.write), .processed(1), "another call")
        XCTAssertEqual(FaultInjection.pendingFailures, 1)
        XCTAssertThrowsError(try readOne(a.read))
        FaultInjection.inject(.noMemory, into: .read, count: 5)
        FaultInjection.reset()
        XCTAssertEqual(FaultInjection.pendingFailures, 0)
        XCTAssertEqual(try readOne(a.read), .processed(1))
    }

    func testCloseIsNeverRetried() throws {
        // EINTR from close: the descriptor is gone on Linux, so close neither retries nor reports it.
        let (r, w) = try makePipe()
        toClose.append(w)
        FaultInjection.inject(.interrupted, into: .close, count: 2, fd: r)
        XCTAssertNoThrow(try Syscall.close(r))
        XCTAssertEqual(FaultInjection.pendingFailures, 1, "close was retried")
        XCTAssertTrue(isClosed(r))
        FaultInjection.reset()
        // Any other failure is reported, and the descriptor is closed all the same.
        let (r2, w2) = try makePipe()
        toClose.append(w2)
        FaultInjection.inject(Errno(rawValue: EIO), into: .close, count: 2, fd: r2)
        XCTAssertThrowsError(try Syscall.close(r2)) {
            XCTAssertEqual($0 as? SyscallError, SyscallError(.close, errno: Errno(rawValue: EIO)))
        }
        XCTAssertEqual(FaultInjection.pendingFailures, 1, "close was retried")
        XCTAssertTrue(isClosed(r2))
    }

    func testLoopCloseReportsAFailedCloseButClosesAnyway() throws {
        let runner = try ThreadedLoop(name: "close-fault")
        runner.start()
        defer { XCTAssertNoThrow(try runner.stop()) }
        let loop = runner.loop
        let (r, w) = try makePipe()
        toClose.append(w)
        try onLoop(loop) {
            try loop.register(fd: r, interest: .readable, handler: ClosureHandler { _ in })
            FaultInjection.inject(Errno(rawValue: EIO), into: .close, fd: r)
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
            FaultInjection.inject(errno, into: call)
            XCTAssertThrowsError(try EventLoop(name: "doomed")) {
                XCTAssertEqual($0 as? EventLoopError, .system(SyscallError(call, errno: errno)))
            }
            XCTAssertEqual(FaultInjection.pendingFailures, 0)
            XCTAssertEqual(openDescriptorCount(), before, "descriptors leaked when \(call) failed")
        }
        FaultInjection.inject(.tooManyOpenFiles, into: .eventfd)
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
        FaultInjection.inject(.interrupted, into: .epollWait, count: 3, fd: epfd)
        FaultInjection.inject(.noMemory, into: .epollWait, count: 5, fd: epfd)
        // A task that re-queues itself keeps the loop polling (without blocking) until every failure is used.
        let consumed = DispatchSemaphore(value: 0)
        @Sendable func poll() {
            if FaultInjection.pendingFailures == 0 { consumed.signal() } else { loop.executeOnLoop(poll) }
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
        FaultInjection.inject(.noMemory, into: .eventfdRead, count: 3, fd: loop.wakeFD)
        // Each task is submitted while the loop sleeps, so each is a wakeup through the eventfd.
        for i in 0..<10 {
            XCTAssertEqual(try onLoop(loop) { i }, i)
        }
    }
}
