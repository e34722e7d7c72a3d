import Dispatch
import Foundation
import Glibc
import XCTest

/// Every blocking wait in the suite is bounded by this many seconds.
let testTimeout: TimeInterval = 10

/// A value shared between the test thread, loop threads and delegate queues, behind a lock.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var _value: Value

    init(_ value: Value) { _value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&_value)
    }

    var value: Value {
        get { withLock { $0 } }
        set { withLock { $0 = newValue } }
    }
}

/// A one-shot signal with a bounded wait.
final class Signal: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    func fire() { semaphore.signal() }

    /// Waits at most `timeout` seconds; false if the signal never came.
    @discardableResult
    func wait(_ timeout: TimeInterval = testTimeout) -> Bool {
        semaphore.wait(timeout: .now() + timeout) == .success
    }
}

/// Runs `body` on a new thread; the returned signal fires once `body` has run *and been released*, so
/// whatever it captured (a socket, and through it an event loop) is no longer kept alive by the thread.
@discardableResult
func onNewThread(_ body: @escaping () -> Void) -> Signal {
    final class Job: @unchecked Sendable {
        var body: (() -> Void)?
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    let job = Job(body)
    let done = Signal()
    Thread {
        job.body?()
        job.body = nil
        done.fire()
    }.start()
    return done
}

/// Thrown when a bounded wait runs out.
struct TestTimeout: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out after \(Int(testTimeout)) s waiting for \(what)" }
}

extension Signal {
    func waitOrThrow(_ what: String) throws {
        if !wait() { throw TestTimeout(what: what) }
    }
}

/// Waits (bounded) for a condition that other threads make true, re-checking whenever `condition` is signalled.
/// Used by ``RecordingDelegate``; kept separate so other waits can reuse it.
final class ConditionWaiter: @unchecked Sendable {
    let condition = NSCondition()

    /// Runs `body` under the lock and wakes every waiter.
    func update<R>(_ body: () -> R) -> R {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body()
    }

    /// Reads under the lock.
    func read<R>(_ body: () -> R) -> R {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    /// Waits until `predicate` (evaluated under the lock) holds; false after `timeout` seconds.
    func wait(timeout: TimeInterval = testTimeout, until predicate: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !predicate() {
            if !condition.wait(until: deadline) { return predicate() }
        }
        return true
    }
}

/// `count` bytes of a pattern that does not repeat at small periods (so misordered chunks are caught).
func patternData(_ count: Int) -> Data {
    let block = (0..<251).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
    var data = Data(capacity: count)
    while data.count + block.count <= count { data.append(contentsOf: block) }
    data.append(contentsOf: block.prefix(count - data.count))
    return data
}

/// `RLIMIT_NOFILE` as `getrlimit`/`setrlimit` take it.
let noFileLimit = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
