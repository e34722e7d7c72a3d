import Synchronization

/// Makes chosen system calls fail as if the kernel had said so, for tests.
///
/// Each rule fails the next `count` calls of one kind (optionally only on one descriptor) with an `errno`.
/// The seam checks one relaxed atomic flag per call while no rule is armed, so the hook costs nothing that
/// a benchmark can see. Rules are process-wide: tests that use them must not run concurrently with each other.
///
/// ```swift
/// FaultInjection.inject(.tooManyOpenFiles, into: .accept, count: 3)
/// defer { FaultInjection.reset() }
/// ```
package enum FaultInjection {
    struct Rule {
        var call: SystemCall
        var errno: Errno
        var remaining: Int
        var fd: Int32?
    }

    private static let armed = Atomic<Bool>(false)
    private static let rules = Locked([Rule]())

    /// Fails the next `count` calls of `call` (on `fd` only, when given) with `errno`.
    package static func inject(_ errno: Errno, into call: SystemCall, count: Int = 1, fd: Int32? = nil) {
        rules.withLock { $0.append(Rule(call: call, errno: errno, remaining: count, fd: fd)) }
        armed.store(true, ordering: .releasing)
    }

    /// Removes every rule.
    package static func reset() {
        rules.withLock { $0.removeAll() }
        armed.store(false, ordering: .releasing)
    }

    /// How many injected failures have not been consumed yet.
    package static var pendingFailures: Int {
        rules.withLock { $0.reduce(0) { $0 + $1.remaining } }
    }

    /// The errno to fail this call with, consuming one use of the matching rule; `nil` almost always.
    @inline(__always)
    static func failure(for call: SystemCall, fd: Int32) -> Errno? {
        guard armed.load(ordering: .relaxed) else { return nil }
        return consume(call, fd: fd)
    }

    private static func consume(_ call: SystemCall, fd: Int32) -> Errno? {
        rules.withLock { rules -> Errno? in
            guard let i = rules.firstIndex(where: { $0.call == call && ($0.fd == nil || $0.fd == fd) }) else {
                return nil
            }
            let errno = rules[i].errno
            rules[i].remaining -= 1
            if rules[i].remaining <= 0 { rules.remove(at: i) }
            return errno
        }
    }
}
