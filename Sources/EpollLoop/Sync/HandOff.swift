import CEpollShim

/// The library's hand-offs to tasks, made visible to ThreadSanitizer.
///
/// A value made on a loop thread (an accepted connection, the bytes of a read, a datagram, a connect's
/// outcome) reaches the task that waits for it through a continuation. The ordering a resume gives lives in
/// the Swift concurrency runtime, which is not built with ThreadSanitizer, so under the sanitizer the task's
/// first use of the value looked like a race with the loop's writes that made it. Every resume in the
/// library therefore goes through ``UnsafeContinuation/handOff(returning:)`` and its siblings, which release
/// the resumed task's address first, and every await of such a continuation is followed by ``received()``,
/// which acquires it on the resumed side.
///
/// Outside ThreadSanitizer both are one not-taken branch on a null weak symbol (see CEpollShim.h): the
/// sanitizer's presence is known at run time only, since Swift's C importer does not see the sanitizer flag.
package enum HandOff {
    /// Acquires what the thread that resumed the running task released before resuming it. Call right after
    /// an await of a continuation the library resumes (on the throwing path too: an error is a value made
    /// on the loop like any other).
    @inlinable @inline(__always)
    package static func received() {
        cepoll_tsan_acquire_current_task()
    }
}

extension UnsafeContinuation {
    /// The task this continuation resumes: a continuation is a pointer to its task (the runtime's
    /// `swift_continuation_init` returns the task, and `swift_task_getCurrent` gives the same pointer on
    /// the resumed side; a test checks it).
    @inlinable
    package var taskAddress: UnsafeRawPointer { unsafeBitCast(self, to: UnsafeRawPointer.self) }

    /// Releases the task's address for ThreadSanitizer, then resumes it with `value`.
    @inlinable @inline(__always)
    package func handOff(returning value: sending T) {
        cepoll_tsan_release(taskAddress)
        resume(returning: value)
    }

    /// Releases the task's address for ThreadSanitizer, then resumes it throwing `error`.
    @inlinable @inline(__always)
    package func handOff(throwing error: E) {
        cepoll_tsan_release(taskAddress)
        resume(throwing: error)
    }

    /// Releases the task's address for ThreadSanitizer, then resumes it with `result`.
    @inlinable @inline(__always)
    package func handOff(with result: sending Result<T, E>) {
        cepoll_tsan_release(taskAddress)
        resume(with: result)
    }
}

extension UnsafeContinuation where T == Void {
    /// Releases the task's address for ThreadSanitizer, then resumes it.
    @inlinable @inline(__always)
    package func handOff() {
        cepoll_tsan_release(taskAddress)
        resume()
    }
}
