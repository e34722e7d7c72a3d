import Synchronization
import XCTest

@testable import LoopSocket

/// `withCancellationHandler` reaches the concurrency runtime through CEpollShim's forwarders rather than the
/// standard library: these tests hold it to `withTaskCancellationHandler`'s contract, so a toolchain whose
/// runtime differs fails here first.
final class TaskCancellationRecordTests: XCTestCase {
    /// Cancelled while suspended in the operation: the handler runs once, and the operation then finishes.
    func testHandlerRunsOnceWhenCancelledWhileSuspended() async throws {
        let calls = Atomic<Int>(0)
        let (stream, gate) = AsyncStream<Void>.makeStream()
        let (started, startedGate) = AsyncStream<Void>.makeStream()
        let task = Task { () async throws -> Int in
            try await withCancellationHandler {
                startedGate.finish()
                for await _ in stream {}  // until the handler opens the gate
                return 42
            } onCancel: {
                calls.add(1, ordering: .relaxed)
                gate.finish()
            }
        }
        for await _ in started {}
        task.cancel()
        let value = try await task.value
        XCTAssertEqual(value, 42)
        XCTAssertEqual(calls.load(ordering: .relaxed), 1)
        task.cancel()
        XCTAssertEqual(calls.load(ordering: .relaxed), 1, "a second cancel ran the handler again")
    }

    /// Already cancelled: the handler runs at once, before the operation, and the operation still runs.
    func testHandlerRunsAtOnceInACancelledTask() async throws {
        let order = Mutex<[String]>([])
        let task = Task { () async throws -> Void in
            withUnsafeCurrentTask { $0?.cancel() }
            try await withCancellationHandler {
                order.withLock { $0.append("operation") }
            } onCancel: {
                order.withLock { $0.append("handler") }
            }
        }
        try await task.value
        XCTAssertEqual(order.withLock { $0 }, ["handler", "operation"])
    }

    /// Not cancelled while it ran: the handler never runs, and cancelling the task afterwards does not reach
    /// it (its record was removed), while an enclosing handler still runs.
    func testHandlerIsRemovedWhenTheOperationReturns() async throws {
        let inner = Atomic<Int>(0)
        let outer = Atomic<Int>(0)
        let (proceed, proceedGate) = AsyncStream<Void>.makeStream()
        let (reached, reachedGate) = AsyncStream<Void>.makeStream()
        let task = Task { () async throws -> Void in
            try await withCancellationHandler {
                try await withCancellationHandler {
                    await Task.yield()
                } onCancel: {
                    inner.add(1, ordering: .relaxed)
                }
                reachedGate.finish()
                for await _ in proceed {}
            } onCancel: {
                outer.add(1, ordering: .relaxed)
                proceedGate.finish()
            }
        }
        for await _ in reached {}
        task.cancel()
        try await task.value
        XCTAssertEqual(inner.load(ordering: .relaxed), 0, "the inner handler ran after its operation returned")
        XCTAssertEqual(outer.load(ordering: .relaxed), 1)
    }

    /// The operation's error reaches the caller, and the record is removed on that path too.
    func testErrorsPassThrough() async throws {
        struct Expected: Error {}
        let calls = Atomic<Int>(0)
        let task = Task { () async throws -> Void in
            do {
                try await withCancellationHandler { () async throws -> Void in throw Expected() } onCancel: {
                    calls.add(1, ordering: .relaxed)
                }
                XCTFail("no error")
            } catch is Expected {
            }
        }
        try await task.value
        task.cancel()
        XCTAssertEqual(calls.load(ordering: .relaxed), 0)
    }
}
