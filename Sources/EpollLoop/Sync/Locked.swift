import Glibc

/// A value behind a pthread mutex, stored in one allocation with it.
///
/// Used instead of `Synchronization.Mutex`: on Linux, ThreadSanitizer cannot see the ordering that `Mutex`'s
/// futex-based lock provides and reports false races, while it understands pthread mutexes. Uncontended,
/// both cost one atomic operation to lock and one to unlock.
///
/// ```swift
/// let counter = Locked(0)
/// counter.withLock { $0 += 1 }
/// ```
package struct Locked<Value>: @unchecked Sendable {
    // @unchecked: the value is only reached through `withLock`, under the mutex.
    private let storage: LockedStorage<Value>

    /// A lock holding `value`.
    package init(_ value: Value) {
        storage = LockedStorage.make(value)
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try storage.withLock(body)
    }
}

/// The value (header) and the mutex (element) of a ``Locked``, in one heap object.
final class LockedStorage<Value>: ManagedBuffer<Value, pthread_mutex_t> {
    static func make(_ value: Value) -> LockedStorage<Value> {
        let buffer = LockedStorage.create(minimumCapacity: 1) { _ in value }
        let storage = unsafeDowncast(buffer, to: LockedStorage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            let rc = pthread_mutex_init(mutex, nil)
            precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
        }
        return storage
    }

    deinit {
        // The header is a stored property of ManagedBuffer and is destroyed with it; the element is ours.
        withUnsafeMutablePointerToElements { mutex in
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
        }
    }

    @inline(__always)
    func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try withUnsafeMutablePointers { (header, mutex) throws(Failure) -> Result in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&header.pointee)
        }
    }
}
