import Dispatch
import Glibc
import XCTest

@testable import EpollLoop

/// Work queued from other threads before `epoll_wait` returns runs before the events it returned are
/// dispatched (all of it, in one batch), and work the handlers queue runs after them.
final class EventLoopHappensBeforeTests: LoopTestCase {
    override class var loopName: String { "order-loop" }

    /// Holds the loop inside a task until the returned semaphore is signalled (bounded by the wait's timeout).
    private func hold() throws -> DispatchSemaphore {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        try loop.execute {
            entered.signal()
            _ = release.wait(timeout: .now() + 10)
        }
        try entered.waitOrThrow("the loop to hold")
        return release
    }

    func testATaskQueuedBeforeAnEventRunsBeforeItsHandler() throws {
        let loop = self.loop
        let pipe = try makePipe()
        defer { close(pipe.write) }
        let order = Locked<[String]>([])
        let handled = DispatchSemaphore(value: 0)
        try onLoop(loop) {
            try loop.register(fd: pipe.read, interest: .readable, handler: ClosureHandler { _ in
                var byte: UInt8 = 0
                guard read(pipe.read, &byte, 1) == 1 else { return }
                order.withLock { $0.append("io \(byte)") }
                // Queued by the handler: runs right after it.
                loop.executeOnLoop { order.withLock { $0.append("after io \(byte)") } }
                handled.signal()
            })
        }
        for round in 0..<20 {
            let release = try hold()
            try loop.execute { order.withLock { $0.append("task \(round)") } }
            try loop.execute { order.withLock { $0.append("second task \(round)") } }
            XCTAssertEqual(writeBytes(pipe.write, count: 1, value: UInt8(round)), 1)
            release.signal()
            try handled.waitOrThrow("the handler")
            _ = try onLoop(loop) { () }
        }
        let expected = (0..<20).flatMap { ["task \($0)", "second task \($0)", "io \($0)", "after io \($0)"] }
        XCTAssertEqual(order.value, expected)
        try onLoop(loop) { try loop.close(fd: pipe.read) }
    }
}
