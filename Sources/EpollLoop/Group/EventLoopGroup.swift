import CEpollShim
import Glibc
import Synchronization

/// A fixed set of event loops, one thread each (by default one per core), handed out round-robin.
///
/// ```swift
/// let group = try EventLoopGroup()            // one loop per core
/// let loop = group.next()
/// try loop.execute { print("on", loop.name) }
/// try group.shutdownGracefully()
/// ```
public final class EventLoopGroup: Sendable {
    /// The loops, in order.
    public let loops: [EventLoop]
    private let threads: [LoopThread]
    private let cursor = Atomic<Int>(0)
    private let shutdownLock = Locked(false)
    /// ``startReturningFreeMemory(every:threshold:)``'s state.
    let freeMemory = Locked(FreeMemoryReturnState())
    /// The prefix of the loops' names.
    public let name: String

    /// Starts `numberOfLoops` loops, each on its own thread named `"<name>-<i>"`.
    ///
    /// - Parameters:
    ///   - numberOfLoops: how many loops (at least 1); by default the number of CPUs this process may use.
    ///   - name: the prefix of the loops' and threads' names.
    ///   - pinThreads: pin loop `i` to the `i % coreCount`-th CPU this process may run on (its affinity
    ///     mask, so a container's cpuset is respected), for benchmarks and latency-sensitive servers.
    ///   - stallThreshold: report callbacks that hold a loop longer than this to ``LoopDiagnostics``
    ///     (see ``StallReport``); `nil`, the default, turns the stall detector off.
    public init(numberOfLoops: Int = EventLoopGroup.coreCount, name: String = "epoll-loop", pinThreads: Bool = false,
                stallThreshold: Duration? = nil) throws(EventLoopError) {
        let count = max(1, numberOfLoops)
        var loops: [EventLoop] = []
        var threads: [LoopThread] = []
        do {
            for i in 0..<count {
                let loop = try EventLoop(name: "\(name)-\(i)", stallThreshold: stallThreshold)
                loops.append(loop)
                threads.append(try LoopThread(loop: loop, cpu: pinThreads ? Self.allowedCPU(i % Self.coreCount) : nil))
            }
        } catch {
            for loop in loops { loop.initiateShutdown() }
            for thread in threads { thread.join() }
            throw error
        }
        self.loops = loops
        self.threads = threads
        self.name = name
    }

    /// The next loop, round-robin. Any thread.
    public func next() -> EventLoop {
        let i = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(UInt(bitPattern: i) % UInt(loops.count))]
    }

    /// The loop whose thread is calling, if any.
    public var currentLoop: EventLoop? {
        loops.first { $0.inEventLoop }
    }

    /// Shuts every loop down and joins their threads. Safe to call more than once.
    ///
    /// - Throws: ``EventLoopError/calledOnLoop`` on one of the group's threads,
    ///   ``EventLoopError/shutdownTimedOut`` if a loop has not finished within `timeout`.
    public func shutdownGracefully(timeout: Duration = .seconds(30)) throws(EventLoopError) {
        guard currentLoop == nil else { throw .calledOnLoop }
        for loop in loops { loop.initiateShutdown() }
        let deadline = ContinuousClock.now + timeout
        for loop in loops {
            try loop.awaitTermination(timeout: max(.zero, deadline - ContinuousClock.now))
        }
        shutdownLock.withLock { alreadyJoined in
            guard !alreadyJoined else { return }
            alreadyJoined = true
            for thread in threads { thread.join() }
        }
    }

    /// The `index`-th CPU of the calling thread's affinity mask (`nil` if it cannot be read): CPU numbers
    /// need not start at 0 nor be contiguous, as in a container limited to CPUs 4-7.
    static func allowedCPU(_ index: Int) -> Int? {
        let cpu = Int(cepoll_affinity_cpu(Int32(index)))
        return cpu >= 0 ? cpu : nil
    }

    /// The number of CPUs this process may run on (its affinity mask), at least 1.
    public static var coreCount: Int {
        let count = Int(cepoll_affinity_cpu_count())
        return count > 0 ? count : max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }
}
