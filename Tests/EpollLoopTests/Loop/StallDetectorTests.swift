import Dispatch
import Glibc
import XCTest

@testable import EpollLoop

/// The stall detector: a callback that holds its loop past the threshold is reported through
/// `LoopDiagnostics`, with what it was; short work is not.
final class StallDetectorTests: XCTestCase {
    private var group: EventLoopGroup!
    private let reports = Locked<[LoopDiagnostic]>([])
    private var loop: EventLoop { group.loops[0] }

    override func setUpWithError() throws {
        group = try EventLoopGroup(numberOfLoops: 1, name: "stall-test", stallThreshold: .milliseconds(100))
        let reports = self.reports
        LoopDiagnostics.handler = { diagnostic in
            guard diagnostic.loop.hasPrefix("stall-test") else { return }
            reports.withLock { $0.append(diagnostic) }
        }
    }

    override func tearDownWithError() throws {
        LoopDiagnostics.handler = LoopDiagnostics.standardError
        try group?.shutdownGracefully()
        group = nil
    }

    /// The stall reports received so far, once the loop has run the work queued before this call.
    private func stalls() throws -> [StallReport] {
        _ = try onLoop(loop) {}
        return reports.value.compactMap(\.stall)
    }

    func testTaskThatBlocksIsReported() throws {
        _ = try onLoop(loop) { usleep(200_000) }
        let found = try stalls()
        XCTAssertEqual(found.count, 1, "\(found)")
        let report = try XCTUnwrap(found.first)
        // onLoop queues it: the recorded site is TestSupport's call to execute, checked in the next test.
        XCTAssertEqual(report.kind, .task)
        XCTAssertNotNil(report.subject)
        XCTAssertGreaterThanOrEqual(report.duration, .milliseconds(200))
        XCTAssertEqual(report.threshold, .milliseconds(100))
        XCTAssertEqual(report.loop, "stall-test-0")
        XCTAssertEqual(loop.metrics.stalls, 1)
    }

    func testExecuteRecordsTheCallersFileAndLine() throws {
        let done = DispatchSemaphore(value: 0)
        let line = #line + 1
        try loop.execute { usleep(150_000); done.signal() }
        try done.waitOrThrow("the blocking task")
        let report = try XCTUnwrap(try stalls().first)
        XCTAssertEqual(report.subject, "EpollLoopTests/StallDetectorTests.swift:\(line)")
        XCTAssertTrue(report.description.contains("task queued at EpollLoopTests/StallDetectorTests.swift:\(line) held the loop"),
                      report.description)
    }

    func testTimerThatBlocksIsReported() throws {
        let done = DispatchSemaphore(value: 0)
        let line = #line + 1
        try loop.schedule(after: .milliseconds(1)) { usleep(150_000); done.signal() }
        try done.waitOrThrow("the blocking timer")
        let report = try XCTUnwrap(try stalls().first)
        XCTAssertEqual(report.kind, .timer)
        XCTAssertEqual(report.subject, "EpollLoopTests/StallDetectorTests.swift:\(line)")
    }

    func testIOHandlerThatBlocksIsReportedByItsType() throws {
        let loop = self.loop
        let pipe = try makePipe()
        let done = DispatchSemaphore(value: 0)
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { _ in
                _ = readAvailable(pipe.read)
                usleep(150_000)
                done.signal()
            })
        }
        writeBytes(pipe.write)
        try done.waitOrThrow("the blocking handler")
        let report = try XCTUnwrap(try stalls().first)
        XCTAssertEqual(report.kind, .ioHandler)
        XCTAssertEqual(report.subject, String(reflecting: ClosureHandler.self))
        try onLoop(loop) { try loop.close(fd: pipe.read) }
        close(pipe.write)
    }

    func testShortWorkIsNotReported() throws {
        let loop = self.loop
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<200 { try loop.execute { done.signal() } }
        for _ in 0..<20 { try loop.schedule(after: .milliseconds(1)) { done.signal() } }
        for _ in 0..<220 { try done.waitOrThrow("short tasks and timers") }
        XCTAssertEqual(try stalls().count, 0)
        XCTAssertEqual(loop.metrics.stalls, 0)
    }

    func testDefaultHandlerLimitsItsRate() {
        let limiter = RateLimiter(intervalNanoseconds: 1_000_000_000)
        XCTAssertEqual(limiter.admit("stall", now: 10), 0)
        XCTAssertNil(limiter.admit("stall", now: 20))
        XCTAssertNil(limiter.admit("stall", now: 30))
        XCTAssertEqual(limiter.admit("other", now: 40), 0, "each category has its own allowance")
        XCTAssertEqual(limiter.admit("stall", now: 1_000_000_010), 2, "says how many it held back")
    }

    /// Reports from several loops at once: a time read before the limiter's lock can be older than the one
    /// another thread stored meanwhile. It is held back, not a trap.
    func testDefaultHandlerTakesATimeOlderThanTheLastOne() {
        let limiter = RateLimiter(intervalNanoseconds: 1_000_000_000)
        XCTAssertEqual(limiter.admit("tls", now: 5_000_000_000), 0)
        XCTAssertNil(limiter.admit("tls", now: 4_999_999_000))
        XCTAssertEqual(limiter.admit("tls", now: 6_000_000_000), 1)
    }
}
