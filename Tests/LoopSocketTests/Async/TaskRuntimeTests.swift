import EpollLoop
import Glibc
import Synchronization
import XCTest

@testable import LoopSocket

/// The concurrency runtime's private entry points LoopSocket calls (TaskRuntime.swift), each held to the
/// behaviour the library relies on, called directly rather than through `withCancellationHandler` or
/// `executeThenClose`, so that a toolchain whose runtime changed one fails here with that entry point's name
/// in the message (TaskCancellationRecordTests and AsyncSocketTests+Scope test the features built on them).
/// Checked against Swift 6.3.1.
final class TaskRuntimeTests: XCTestCase {
    /// Every entry point TaskRuntime.swift reaches through CEpollShim's forwarders.
    static let entryPoints = [
        "swift_task_addCancellationHandler", "swift_task_removeCancellationHandler", "swift_task_getCurrent",
        "swift_task_isCancelled",
    ]

    /// Each entry point is still exported by the runtime this process runs on (the forwarders would otherwise
    /// fail to load, far from their cause).
    func testEveryEntryPointIsExportedByTheRunningRuntime() {
        for name in Self.entryPoints {
            XCTAssertNotNil(
                dlsym(nil, name),
                "\(name): not exported by the running Swift runtime (libswift_Concurrency); TaskRuntime.swift calls it")
        }
    }

    // MARK: swift_task_addCancellationHandler

    /// A record added to a task that is then cancelled from another thread: the handler runs, and only once
    /// however often the task is cancelled. `withCancellationHandler` relies on this to cancel a suspended read.
    func testAddCancellationHandlerRunsTheHandlerOnceWhenTheTaskIsCancelled() async throws {
        let calls = Atomic<Int>(0)
        let (added, addedGate) = AsyncStream<Void>.makeStream()
        let (fired, firedGate) = AsyncStream<Void>.makeStream()
        let release = Latch()
        let task = Task {
            let record = swiftTaskAddCancellationHandler {
                calls.add(1, ordering: .relaxed)
                firedGate.finish()
            }
            addedGate.finish()
            await release.wait()  // suspended, the record in place, until the test is done with it
            swiftTaskRemoveCancellationHandler(record)
        }
        defer { release.open() }
        guard await finishes(added) else { return XCTFail("the task never added its record") }
        XCTAssertEqual(
            calls.load(ordering: .relaxed), 0, "swift_task_addCancellationHandler: ran the handler of a task not cancelled")
        task.cancel()
        let ran = await finishes(fired)
        XCTAssertTrue(ran, "swift_task_addCancellationHandler: the handler did not run when its task was cancelled")
        task.cancel()
        release.open()
        await task.value
        XCTAssertEqual(
            calls.load(ordering: .relaxed), ran ? 1 : 0,
            "swift_task_addCancellationHandler: the handler ran more than once for one task")
    }

    /// A record added to a task already cancelled: the handler has run by the time the call returns.
    /// `withCancellationHandler` relies on this for a read started in a task cancelled before it.
    func testAddCancellationHandlerRunsTheHandlerAtOnceInACancelledTask() async {
        let counts = await Task { () -> (duringAdd: Int, afterRemove: Int) in
            let calls = Atomic<Int>(0)
            withUnsafeCurrentTask { $0?.cancel() }
            let record = swiftTaskAddCancellationHandler { calls.add(1, ordering: .relaxed) }
            let duringAdd = calls.load(ordering: .relaxed)
            swiftTaskRemoveCancellationHandler(record)
            return (duringAdd, calls.load(ordering: .relaxed))
        }.value
        XCTAssertEqual(
            counts.duringAdd, 1,
            "swift_task_addCancellationHandler: in a task already cancelled, the handler had not run when it returned")
        XCTAssertEqual(counts.afterRemove, 1, "swift_task_addCancellationHandler: the handler ran more than once")
    }

    // MARK: swift_task_removeCancellationHandler

    /// A record removed after a suspension (as `withCancellationHandler` removes its record once the operation
    /// returns, perhaps on another thread): cancelling the task later does not run its handler, while a record
    /// added before it and still in place does run (so the cancellation did reach the task).
    func testRemoveCancellationHandlerStopsTheHandlerFromRunning() async throws {
        let removedCalls = Atomic<Int>(0)
        let keptCalls = Atomic<Int>(0)
        let (added, addedGate) = AsyncStream<Void>.makeStream()
        let (removed, removedGate) = AsyncStream<Void>.makeStream()
        let (keptFired, keptFiredGate) = AsyncStream<Void>.makeStream()
        let (proceed, release) = (Latch(), Latch())
        let task = Task {
            let kept = swiftTaskAddCancellationHandler {
                keptCalls.add(1, ordering: .relaxed)
                keptFiredGate.finish()
            }
            let record = swiftTaskAddCancellationHandler { removedCalls.add(1, ordering: .relaxed) }
            addedGate.finish()
            await proceed.wait()
            swiftTaskRemoveCancellationHandler(record)
            removedGate.finish()
            await release.wait()
            swiftTaskRemoveCancellationHandler(kept)
        }
        defer { proceed.open(); release.open() }
        guard await finishes(added) else { return XCTFail("the task never added its records") }
        proceed.open()
        guard await finishes(removed) else { return XCTFail("the task never removed its record") }
        task.cancel()
        let keptRan = await finishes(keptFired)
        XCTAssertTrue(keptRan, "swift_task_addCancellationHandler: the handler did not run when its task was cancelled")
        release.open()
        await task.value
        XCTAssertEqual(
            removedCalls.load(ordering: .relaxed), 0,
            "swift_task_removeCancellationHandler: a removed record's handler ran when the task was cancelled")
        XCTAssertEqual(keptCalls.load(ordering: .relaxed), 1)
    }

    // MARK: swift_task_isCancelled

    /// A running task is not cancelled until it is, from another task, while it waits; then it is, as
    /// `Task.isCancelled` says. Every `AsyncSocket` read asks this before it reads.
    func testIsCancelledFollowsTheTasksCancellation() async {
        let (suspended, suspendedGate) = AsyncStream<Void>.makeStream()
        let release = Latch()
        let task = Task { () -> (before: Bool?, after: Bool?, library: Bool) in
            let before = swiftTaskGetCurrent().map { swiftTaskIsCancelled($0) }
            suspendedGate.finish()
            await release.wait()
            return (before, swiftTaskGetCurrent().map { swiftTaskIsCancelled($0) }, Task.isCancelled)
        }
        defer { release.open() }
        guard await finishes(suspended) else { return XCTFail("the task never suspended") }
        task.cancel()
        release.open()
        let seen = await task.value
        XCTAssertEqual(seen.before, false, "swift_task_isCancelled: a running task that nobody cancelled reads as cancelled")
        XCTAssertEqual(seen.after, true, "swift_task_isCancelled: a cancelled task reads as not cancelled")
        XCTAssertTrue(seen.library, "Task.isCancelled disagrees: the test did not cancel the task")
    }

    // MARK: swift_task_getCurrent

    /// On a thread running no task (here the test's own, in a synchronous test), there is no current task.
    func testGetCurrentIsNilOutsideATask() {
        XCTAssertNil(swiftTaskGetCurrent(), "swift_task_getCurrent: returned a task on a thread running none")
    }

    /// Inside a task: an address, the same after a suspension resumed from another thread, and different in a
    /// child task and in another task alive at once. The read scope relies on all three: it records its task's
    /// address when it opens and compares it on each read.
    func testGetCurrentIdentifiesTheRunningTask() async {
        let (suspended, suspendedGate) = AsyncStream<Void>.makeStream()
        let release = Latch()
        let task = Task { () -> (before: UInt?, after: UInt?, child: UInt?) in
            let before = swiftTaskGetCurrent().map { UInt(bitPattern: $0) }
            async let child = swiftTaskGetCurrent().map { UInt(bitPattern: $0) }
            let inChild = await child
            suspendedGate.finish()
            await release.wait()  // resumed by the test's thread
            return (before, swiftTaskGetCurrent().map { UInt(bitPattern: $0) }, inChild)
        }
        defer { release.open() }
        guard await finishes(suspended) else { return XCTFail("the task never suspended") }
        let other = await Task { swiftTaskGetCurrent().map { UInt(bitPattern: $0) } }.value  // while `task` lives
        release.open()
        let seen = await task.value
        guard let before = seen.before else { return XCTFail("swift_task_getCurrent: nil inside a running task") }
        XCTAssertEqual(seen.after, before, "swift_task_getCurrent: a task's address changed across a suspension")
        XCTAssertNotNil(seen.child, "swift_task_getCurrent: nil inside a child task")
        XCTAssertNotEqual(seen.child, before, "swift_task_getCurrent: a child task has its parent's address")
        XCTAssertNotNil(other, "swift_task_getCurrent: nil inside a running task")
        XCTAssertNotEqual(other, before, "swift_task_getCurrent: two tasks alive at once have the same address")
    }

    /// On an event loop, as the read scope asks: a task that prefers the loop is identified there, across a
    /// suspension, and a plain closure the loop runs is in no task (so a delegate callback is never taken for
    /// the scope's task).
    func testGetCurrentOnAnEventLoop() async throws {
        let group = try EventLoopGroup(numberOfLoops: 1, name: "task-runtime")
        defer { XCTAssertNoThrow(try group.shutdownGracefully(timeout: .seconds(10))) }
        let loop = group.next()
        let (suspended, suspendedGate) = AsyncStream<Void>.makeStream()
        let release = Latch()
        let task = Task(executorPreference: loop) { () -> (before: UInt?, after: UInt?, onLoop: Bool) in
            let before = swiftTaskGetCurrent().map { UInt(bitPattern: $0) }
            suspendedGate.finish()
            await release.wait()
            return (before, swiftTaskGetCurrent().map { UInt(bitPattern: $0) }, loop.inEventLoop)
        }
        defer { release.open() }
        guard await finishes(suspended) else { return XCTFail("the task never suspended") }
        let (plain, plainGate) = AsyncStream<UInt?>.makeStream()
        try loop.execute {
            plainGate.yield(swiftTaskGetCurrent().map { UInt(bitPattern: $0) })
            plainGate.finish()
        }
        var outside: UInt?? = .none
        for await value in plain { outside = value }
        release.open()
        let seen = await task.value
        XCTAssertTrue(seen.onLoop, "the task did not resume on its preferred loop")
        XCTAssertNotNil(seen.before, "swift_task_getCurrent: nil inside a task running on an event loop")
        XCTAssertEqual(seen.after, seen.before, "swift_task_getCurrent: a task's address changed across a suspension")
        XCTAssertEqual(outside, .some(nil), "swift_task_getCurrent: returned a task in a closure the loop ran")
    }
}

/// Whether `stream` finishes within `seconds` (the bound on every wait in these tests; a timer, not a means of
/// ordering).
private func finishes<T: Sendable>(_ stream: AsyncStream<T>, within seconds: Double = 10) async -> Bool {
    await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            for await _ in stream {}
            return !Task.isCancelled
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
    }
}

/// A one-shot gate a task awaits until another thread opens it. Unlike an `AsyncStream` it ignores
/// cancellation, so a cancelled task stays suspended, with its records in place, until the test lets it go.
private final class Latch: Sendable {
    private struct State: ~Copyable {
        var open = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    /// Opens the latch, resuming its waiter if there is one; later calls do nothing.
    func open() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.open = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns once the latch is open. One waiter at a time.
    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if !state.open { state.waiter = continuation }
                return state.open
            }
            if isOpen { continuation.resume() }
        }
    }
}
