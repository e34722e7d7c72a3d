import Dispatch
import EpollLoop
import NIOCore
import NIOPosix

/// Jobs per batch.
let jobCount = 1_000_000
/// Children created between two yields of the spawning task (benchmark 1).
let spawnChunk = 1_000
/// Round trips per ping-pong batch.
let pingPongRoundTrips = 100_000

/// Signalled when a batch is done; the benchmark thread waits on it.
let batchDone = DispatchSemaphore(value: 0)

/// Two EpollLoop loops.
let epollGroup: EpollLoop.EventLoopGroup = {
    do {
        return try EpollLoop.EventLoopGroup(numberOfLoops: 2, name: "bench-executor")
    } catch {
        fatalError("cannot start the EpollLoop group: \(error)")
    }
}()
let epollLoops: [EpollLoop.EventLoop] = epollGroup.loops

/// Two SwiftNIO loops; their `executor` is the loop itself (`NIOSerialEventLoopExecutor`).
let nioGroup = MultiThreadedEventLoopGroup(numberOfThreads: 2)
let nioLoops: [any NIOCore.EventLoop] = Array(nioGroup.makeIterator())
let nioExecutors: [any SerialExecutor] = nioLoops.map { $0.executor }

/// Counts the jobs of a batch on the loop that runs them; the last one signals.
final class JobCounter: @unchecked Sendable {
    private var remaining = 0

    static let epoll = JobCounter()
    static let nio = JobCounter()

    /// Before the batch, from the benchmark thread (the loop is idle then).
    func reset(_ count: Int) {
        remaining = count
    }

    /// On the loop.
    func tick() {
        remaining -= 1
        if remaining == 0 {
            batchDone.signal()
        }
    }
}

/// The actor whose executor is EpollLoop's loop 0.
@globalActor
actor EpollLoopActor {
    static let shared = EpollLoopActor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        epollLoops[0].asUnownedSerialExecutor()
    }

    /// Creates `count` child tasks on this actor (so, from the loop), yielding after every chunk.
    @EpollLoopActor
    static func spawnFromLoop(_ count: Int) async {
        JobCounter.epoll.reset(count)
        var left = count
        while left > 0 {
            for _ in 0..<min(spawnChunk, left) {
                Task { JobCounter.epoll.tick() }
            }
            left -= spawnChunk
            await Task.yield()
        }
    }
}

/// The actor whose executor is SwiftNIO's loop 0.
@globalActor
actor NIOLoopActor {
    static let shared = NIOLoopActor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        nioExecutors[0].asUnownedSerialExecutor()
    }

    @NIOLoopActor
    static func spawnFromLoop(_ count: Int) async {
        JobCounter.nio.reset(count)
        var left = count
        while left > 0 {
            for _ in 0..<min(spawnChunk, left) {
                Task { JobCounter.nio.tick() }
            }
            left -= spawnChunk
            await Task.yield()
        }
    }
}

/// The answering side of the ping-pong, on a given executor.
actor Ponger {
    private let executor: UnownedSerialExecutor
    private var count = 0

    init(executor: UnownedSerialExecutor) {
        self.executor = executor
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor }

    func pong() -> Int {
        count += 1
        return count
    }
}

/// The asking side: awaits the peer `count` times, then signals.
actor Pinger {
    private let executor: UnownedSerialExecutor
    private let peer: Ponger

    init(executor: UnownedSerialExecutor, peer: Ponger) {
        self.executor = executor
        self.peer = peer
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor }

    func run(_ count: Int) async {
        var last = 0
        for _ in 0..<count {
            last = await peer.pong()
        }
        precondition(last > 0)
        batchDone.signal()
    }
}

let epollPing = Pinger(executor: epollLoops[0].asUnownedSerialExecutor(),
                       peer: Ponger(executor: epollLoops[1].asUnownedSerialExecutor()))
let nioPing = Pinger(executor: nioExecutors[0].asUnownedSerialExecutor(),
                     peer: Ponger(executor: nioExecutors[1].asUnownedSerialExecutor()))
