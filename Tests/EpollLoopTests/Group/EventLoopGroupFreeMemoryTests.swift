import CEpollShim
import Dispatch
import Glibc
import XCTest

@testable import EpollLoop

/// `EventLoopGroup.startReturningFreeMemory`: a check every interval on the first loop, a trim only when
/// malloc holds at least the threshold free, the freed pages back with the kernel after it, and nothing
/// after `stopReturningFreeMemory`.
final class EventLoopGroupFreeMemoryTests: XCTestCase {
    private var group: EventLoopGroup!

    override func setUpWithError() throws {
        group = try EventLoopGroup(numberOfLoops: 2, name: "free-memory")
    }

    override func tearDownWithError() throws {
        try group.shutdownGracefully(timeout: .seconds(10))
    }

    /// Waits (at most 10 s) until `condition` holds of the group's counts.
    private func waitForReturns(_ what: String, _ condition: ((checks: Int, trims: Int)) -> Bool) throws {
        let deadline = DispatchTime.now() + .seconds(10)
        while !condition(group.freeMemoryReturns) {
            guard DispatchTime.now() < deadline else { throw Failure(what) }
            usleep(1_000)
        }
    }

    private struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ what: String) { description = "timed out waiting for \(what)" }
    }

    /// The process's resident set, from /proc/self/statm.
    private func residentBytes() throws -> Int {
        let text = try XCTUnwrap(readSmallFile("/proc/self/statm"))
        let pages = try XCTUnwrap(Int(text.split(separator: " ")[1]))
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    func testNoTrimBelowTheThresholdAndNoCheckAfterStopping() throws {
        try group.startReturningFreeMemory(every: .milliseconds(5), threshold: .max)
        try waitForReturns("three checks") { $0.checks >= 3 }
        XCTAssertEqual(group.freeMemoryReturns.trims, 0, "nothing reaches an infinite threshold")
        group.stopReturningFreeMemory()
        let checks = group.freeMemoryReturns.checks
        // Ten intervals on the loop that ran the checks: none of them may see another.
        let passed = DispatchSemaphore(value: 0)
        try group.loops[0].schedule(after: .milliseconds(50)) { passed.signal() }
        XCTAssertEqual(passed.wait(timeout: .now() + 10), .success)
        XCTAssertLessThanOrEqual(group.freeMemoryReturns.checks, checks + 1, "at most a check already running")
        let settled = group.freeMemoryReturns.checks
        let again = DispatchSemaphore(value: 0)
        try group.loops[0].schedule(after: .milliseconds(50)) { again.signal() }
        XCTAssertEqual(again.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(group.freeMemoryReturns.checks, settled)
    }

    /// 32 MiB freed between live blocks stays resident (malloc returns only a heap's top by itself); a trim
    /// gives most of it back.
    func testFreedPagesBetweenLiveBlocksGoBackToTheKernel() throws {
        let chunk = 64 * 1024  // below malloc's mmap threshold: from the heap
        var blocks: [UnsafeMutableRawPointer] = []
        for _ in 0..<513 {
            let block = try XCTUnwrap(malloc(chunk))
            memset(block, 0x5A, chunk)
            blocks.append(block)
        }
        // Free all but the last (it holds the heap's top in place, so free() itself trims nothing).
        for block in blocks.dropLast() { free(block) }
        defer { free(blocks.last!) }
        if dlsym(nil, "__tsan_init") != nil || dlsym(nil, "__asan_init") != nil {
            // A sanitizer's allocator replaces glibc's malloc: mallinfo2 reports less than the threshold free,
            // so the checks run and never trim.
            XCTAssertLessThan(cepoll_malloc_free_bytes(), 16 << 20)
            try group.startReturningFreeMemory(every: .milliseconds(5), threshold: 16 << 20)
            try waitForReturns("three checks") { $0.checks >= 3 }
            group.stopReturningFreeMemory()
            XCTAssertEqual(group.freeMemoryReturns.trims, 0)
            return
        }
        XCTAssertGreaterThanOrEqual(cepoll_malloc_free_bytes(), 32 << 20)
        let before = try residentBytes()
        try group.startReturningFreeMemory(every: .milliseconds(5), threshold: 16 << 20)
        try waitForReturns("a trim") { $0.trims >= 1 }
        group.stopReturningFreeMemory()
        let after = try residentBytes()
        XCTAssertGreaterThanOrEqual(before - after, 16 << 20, "RSS \(before) before the trim, \(after) after")
    }

    func testAShutDownGroupRefuses() throws {
        try group.shutdownGracefully(timeout: .seconds(10))
        XCTAssertThrowsError(try group.startReturningFreeMemory()) { XCTAssertEqual($0 as? EventLoopError, .shutDown) }
    }
}
