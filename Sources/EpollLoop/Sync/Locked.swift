import CEpollShim

/// A value behind a 4-byte futex lock (`cepoll_lock_t`), stored in one allocation with it.
///
/// The lock's size counts where there is one per object (a socket's shared state keeps the same 4-byte
/// lock word in the socket object itself): `pthread_mutex_t` is 40 bytes, with an 8-byte alignment. Used
/// instead of `Synchronization.Mutex`, which is as small: on Linux its atomics run inside the uninstrumented standard
/// library, so ThreadSanitizer cannot see the ordering it provides and reports false races, while
/// `cepoll_lock`'s atomics are compiled with the sanitizer in a TSan build. Uncontended, locking is one
/// compare-and-swap and unlocking one exchange (glibc's own lock algorithm; see CEpollShim.h).
///
/// ```swift
/// let counter = Locked(0)
/// counter.withLock { $0 += 1 }
/// ```
package struct Locked<Value>: @unchecked Sendable {
    // @unchecked: the value is only reached through `withLock`, under the lock.
    @usableFromInline let storage: ManagedBuffer<Value, cepoll_lock_t>

    // Inlinable (the entry points below), so the other modules' calls are specialised: called generically
    // across the module boundary, each `withLock` went through an unspecialised closure call (callgrind,
    // connect churn).

    /// A lock holding `value`.
    @inlinable
    package init(_ value: Value) {
        self.init(storage: LockedStorage<Value>.create(minimumCapacity: 1) { _ in value })
    }

    /// A lock over `storage`, a new buffer whose header is the value; its lock word is initialised here.
    ///
    /// For a lock made as often as connections are: pass a new instance of a non-generic subclass of
    /// `ManagedBuffer<Value, cepoll_lock_t>` declared for the purpose. A generic class's metadata
    /// (`LockedStorage<Value>`'s) is looked up in the runtime's cache at every creation, about 330
    /// instructions (callgrind, connect churn); a non-generic class's is made once.
    @inlinable
    package init(storage: ManagedBuffer<Value, cepoll_lock_t>) {
        storage.withUnsafeMutablePointerToElements { $0.initialize(to: 0) }
        self.storage = storage
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try storage.withUnsafeMutablePointers { (header, lock) throws(Failure) -> Result in
            cepoll_lock(lock)
            defer { cepoll_unlock(lock) }
            return try body(&header.pointee)
        }
    }
}

/// The value (header) and the lock word (element) of a ``Locked``, in one heap object.
///
/// No deinit: the header is a stored property of ManagedBuffer and is destroyed with it, and the lock word
/// is a trivial integer with nothing to release.
@usableFromInline
final class LockedStorage<Value>: ManagedBuffer<Value, cepoll_lock_t> {}
