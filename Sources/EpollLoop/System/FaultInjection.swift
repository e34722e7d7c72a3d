// Debug builds only (SwiftPM's debug configuration, which `swift test` uses, defines DEBUG): a release build
// has neither this type nor the seam's check for it, so the hot path pays nothing for it there.
#if DEBUG
import Glibc
import Synchronization

/// Makes chosen system calls fail as if the kernel had said so, for tests.
///
/// Rules belong to a ``Scope``, and each names where it applies (``Target``): one descriptor, the thread of
/// one event loop, or the thread that made the rule. A rule matches only calls of its kind made there, so
/// tests running at once, each with its own descriptors, loops and thread, never consume each other's rules,
/// and no rule can fail a call of the process at large (another test's socket, a loop's internal eventfd). A
/// scope's rules end with it: call ``Scope/end()`` when the test is done (releasing the scope ends it too).
///
/// ```swift
/// let faults = FaultInjection.Scope()
/// defer { faults.end() }
/// faults.inject(.tooManyOpenFiles, into: .accept, count: 3, on: .descriptor(listenerFD))
/// ```
///
/// The seam checks one relaxed atomic flag per call while no rule exists anywhere, and compiles the check only
/// into debug builds.
package enum FaultInjection {
    /// Where a rule applies: which calls of its kind it may fail.
    package struct Target: Sendable {
        fileprivate enum Kind: Sendable {
            case descriptor(Int32)
            case loop(EventLoop)
            case thread(pthread_t)
        }

        fileprivate let kind: Kind

        /// Calls on descriptor `fd`. The rule ends when the seam closes `fd` (after failing that `close`, if
        /// the rule is for `close`): once the number is free, anyone may be given it.
        package static func descriptor(_ fd: Int32) -> Target { Target(kind: .descriptor(fd)) }

        /// Calls made on `loop`'s thread, on any descriptor or none (`socket`, say): for calls whose descriptor
        /// the test cannot know. The loop must be the test's own.
        package static func loop(_ loop: EventLoop) -> Target { Target(kind: .loop(loop)) }

        /// Calls made on the calling thread, on any descriptor or none: for synchronous code the test runs
        /// itself (creating a loop, setting up a listener). Not from async code, whose thread other tasks share.
        package static var thisThread: Target {
            precondition(
                withUnsafeCurrentTask { $0 == nil },
                "FaultInjection.Target.thisThread in a task: other tasks run on its thread; name a descriptor or a loop")
            return Target(kind: .thread(pthread_self()))
        }

        fileprivate func matches(_ fd: Int32) -> Bool {
            switch kind {
            case .descriptor(let target): target == fd
            case .loop(let loop): loop.inEventLoop
            case .thread(let thread): pthread_equal(thread, pthread_self()) != 0
            }
        }

        fileprivate func isDescriptor(_ fd: Int32) -> Bool {
            if case .descriptor(fd) = kind { return true }
            return false
        }
    }

    /// A test's set of rules: injected through it, counted through it, and removed together by ``end()``.
    package final class Scope: Sendable {
        fileprivate let id: UInt64

        /// An empty scope.
        package init() {
            id = FaultInjection.nextScope.add(1, ordering: .relaxed).newValue
        }

        deinit { end() }

        /// Fails the next `count` calls of `call` made at `target` with `errno`.
        package func inject(_ errno: Errno, into call: SystemCall, count: Int = 1, on target: Target) {
            precondition(count > 0, "a rule fails at least one call")
            FaultInjection.state.withLock { state in
                state.rules.append(Rule(scope: id, call: call, target: target, errno: errno, remaining: count))
                FaultInjection.armed.store(true, ordering: .releasing)
            }
        }

        /// How many of this scope's injected failures have not happened yet (a rule that ended with its
        /// descriptor no longer counts).
        package var pendingFailures: Int {
            FaultInjection.state.withLock { state in
                state.rules.reduce(0) { $0 + ($1.scope == id ? $1.remaining : 0) }
            }
        }

        /// How many calls this scope's rules have failed so far.
        package var failuresInjected: Int {
            FaultInjection.state.withLock { $0.injected[id] ?? 0 }
        }

        /// Removes this scope's rules. Later calls do nothing.
        package func end() {
            FaultInjection.state.withLock { state in
                state.rules.removeAll { $0.scope == id }
                state.injected[id] = nil
                FaultInjection.armed.store(!state.rules.isEmpty, ordering: .releasing)
            }
        }
    }

    fileprivate struct Rule {
        var scope: UInt64
        var call: SystemCall
        var target: Target
        var errno: Errno
        var remaining: Int
    }

    fileprivate struct State {
        /// Every scope's rules, oldest first.
        var rules: [Rule] = []
        /// How many calls each scope's rules have failed, by scope.
        var injected: [UInt64: Int] = [:]
    }

    /// Whether any rule exists: all the seam reads while none does.
    fileprivate static let armed = Atomic<Bool>(false)
    fileprivate static let state = Locked(State())
    fileprivate static let nextScope = Atomic<UInt64>(0)

    /// The errno to fail this call with, consuming one use of the first matching rule; `nil` almost always.
    @inline(__always)
    static func failure(for call: SystemCall, fd: Int32) -> Errno? {
        guard armed.load(ordering: .relaxed) else { return nil }
        return consume(call, fd: fd, closing: false)
    }

    /// ``failure(for:fd:)`` for `close(fd)`; also ends every other rule on `fd`, whose number is about to be
    /// free for anyone to be given.
    @inline(__always)
    static func failure(closing fd: Int32) -> Errno? {
        guard armed.load(ordering: .relaxed) else { return nil }
        return consume(.close, fd: fd, closing: true)
    }

    private static func consume(_ call: SystemCall, fd: Int32, closing: Bool) -> Errno? {
        state.withLock { state -> Errno? in
            var errno: Errno?
            if let i = state.rules.firstIndex(where: { $0.call == call && $0.target.matches(fd) }) {
                errno = state.rules[i].errno
                state.injected[state.rules[i].scope, default: 0] += 1
                state.rules[i].remaining -= 1
                if state.rules[i].remaining == 0 { state.rules.remove(at: i) }
            }
            if closing { state.rules.removeAll { $0.target.isDescriptor(fd) } }
            armed.store(!state.rules.isEmpty, ordering: .releasing)
            return errno
        }
    }
}
#endif
