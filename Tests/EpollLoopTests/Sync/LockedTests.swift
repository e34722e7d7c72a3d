import Dispatch
import XCTest

import CEpollShim
@testable import EpollLoop

/// `Locked` and its 4-byte futex lock (`cepoll_lock`): mutual exclusion under contention, the futex path
/// included, and the size that is the reason for it.
final class LockedTests: XCTestCase {
    /// Threads that hammer one lock contend, so the futex wait/wake path runs; a lost update (a non-atomic
    /// read-modify-write under a lock that did not exclude) shows as a short total.
    func testIncrementsFromManyThreadsAreNotLost() {
        let counter = Locked((value: 0, inside: 0, overlaps: 0))
        let threads = 4
        let perThread = 50_000
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<perThread {
                counter.withLock { state in
                    // `inside` is above 0 only if another thread is in the critical section too.
                    if state.inside != 0 { state.overlaps += 1 }
                    state.inside += 1
                    state.value += 1
                    state.inside -= 1
                }
            }
        }
        let result = counter.withLock { $0 }
        XCTAssertEqual(result.value, threads * perThread)
        XCTAssertEqual(result.overlaps, 0)
    }

    /// A holder that sleeps in the kernel while others wait: the waiters must park on the futex and be woken
    /// by the unlock, not spin forever or miss the wake-up (a missed wake-up hangs; the wait is bounded).
    func testWaitersAreWokenWhenTheHolderReleases() {
        let lock = Locked(0)
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        DispatchQueue.global().async(group: finished) {
            lock.withLock { value in
                entered.signal()
                _ = release.wait(timeout: .now() + 10)
                value += 1
            }
        }
        XCTAssertEqual(entered.wait(timeout: .now() + 10), .success)
        for _ in 0..<3 {
            DispatchQueue.global().async(group: finished) { lock.withLock { $0 += 1 } }
        }
        release.signal()
        XCTAssertEqual(finished.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(lock.withLock { $0 }, 4)
    }

    /// A lock over a caller's non-generic storage class (`init(storage:)`, as each socket's shared state is
    /// made): the lock word starts unlocked (a contended lock would leave the thread waiting, bounded here),
    /// the value is the buffer's header, and it is released with the storage.
    func testLockOverNonGenericStorage() {
        final class Value { var count = 0 }
        final class Storage: ManagedBuffer<Value, cepoll_lock_t> {}
        weak var released: Value?
        do {
            let value = Value()
            released = value
            let lock = EpollLoop.Locked<Value>(storage: Storage.create(minimumCapacity: 1) { _ in value })
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                for _ in 0..<10_000 { lock.withLock { $0.count += 1 } }
                done.signal()
            }
            XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
            XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
            XCTAssertEqual(lock.withLock { $0.count }, 20_000)
        }
        XCTAssertNil(released, "the value is released with its lock")
    }

    /// The lock word is 4 bytes: the storage of a 48-byte value is a 68-byte object (16 of header), which
    /// `pthread_mutex_t` (40 bytes) made 104.
    func testTheLockWordIsFourBytes() {
        XCTAssertEqual(MemoryLayout<cepoll_lock_t>.size, 4)
    }
}
