// Memory per pending timer, EpollLoop against SwiftNIO.
//
//     swift run -c release timer-memory              # both libraries, each in a fresh child process
//     swift run -c release timer-memory epoll        # one library in this process
//     swift run -c release timer-memory nio | nio-callback
//
// In each process: start one loop, allocate and touch the storage for 1,000,000 handles (the caller's, not
// the runtime's), take a baseline, then schedule 1,000,000 timers 60 s out inside one task on the loop, and
// measure again while they are all pending. Bytes per pending timer = delta / 1,000,000, where
//   - heap delta = bytes the allocator has handed out (glibc mallinfo2: uordblks + hblkhd), all threads;
//   - RSS delta = VmRSS growth, peak RSS delta = VmHWM growth (includes transient copies while arrays grow).
// The timers are then cancelled and scheduled once more ("warm"): how much memory a second batch needs
// once the runtime's storage has grown.

import CMallocStats
import Dispatch
import EpollLoop
import Foundation
import Glibc
import NIOCore
import NIOPosix

let timerCount = 1_000_000

struct MemorySample {
    var heapBytes: Int
    var rssBytes: Int
    var peakRSSBytes: Int

    static func take() -> MemorySample {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        return MemorySample(heapBytes: cms_allocated_bytes(),
                            rssBytes: kilobytes(status, "VmRSS:") * 1024,
                            peakRSSBytes: kilobytes(status, "VmHWM:") * 1024)
    }

    private static func kilobytes(_ status: String, _ key: String) -> Int {
        for line in status.split(separator: "\n") where line.hasPrefix(key) {
            let fields = line.dropFirst(key.count).split(whereSeparator: { $0 == " " || $0 == "\t" })
            return Int(fields.first ?? "0") ?? 0
        }
        return 0
    }
}

/// Caller-side handle storage, allocated and touched before the baseline so it is not counted.
final class HandleBuffer<Handle>: @unchecked Sendable {
    let base: UnsafeMutablePointer<Handle>
    var count = 0

    init(capacity: Int) {
        let bytes = MemoryLayout<Handle>.stride * capacity
        let raw = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: MemoryLayout<Handle>.alignment)
        memset(raw, 0, bytes)
        base = raw.bindMemory(to: Handle.self, capacity: capacity)
    }

    func append(_ handle: Handle) {
        (base + count).initialize(to: handle)
        count += 1
    }

    func removeAll(_ body: (Handle) -> Void) {
        for i in 0..<count { body(base[i]) }
        base.deinitialize(count: count)
        count = 0
    }
}

struct Report {
    var library: String
    var handleBytes: Int
    /// Before the first batch, with it pending, after cancelling it, with the second batch pending.
    var base, cold, cancelled, warm: MemorySample

    func perTimer(_ a: Int, _ b: Int) -> String {
        String(format: "%.1f", Double(b - a) / Double(timerCount))
    }

    func print() {
        Swift.print("""
        \(library): \(timerCount) pending timers, 60 s out (caller's handle: \(handleBytes) bytes, not counted)
          first batch pending:  heap \(perTimer(base.heapBytes, cold.heapBytes)) B/timer, \
        RSS \(perTimer(base.rssBytes, cold.rssBytes)) B/timer, \
        peak RSS \(perTimer(base.peakRSSBytes, cold.peakRSSBytes)) B/timer
          kept after cancel:    heap \(perTimer(base.heapBytes, cancelled.heapBytes)) B/timer, \
        RSS \(perTimer(base.rssBytes, cancelled.rssBytes)) B/timer
          second batch pending: heap \(perTimer(cancelled.heapBytes, warm.heapBytes)) B/timer more, \
        RSS \(perTimer(cancelled.rssBytes, warm.rssBytes)) B/timer more, \
        peak RSS \(perTimer(base.peakRSSBytes, warm.peakRSSBytes)) B/timer over the start
        """)
    }
}

/// Runs `body` on a loop through `submit` and waits for it.
func onLoop(_ submit: (@escaping @Sendable () -> Void) -> Void, _ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    submit {
        body()
        done.signal()
    }
    done.wait()
}

/// Schedules a batch and samples memory with it pending, cancels it; twice (cold, then warm).
func measure<Handle>(library: String, submit: (@escaping @Sendable () -> Void) -> Void,
                     schedule: @escaping @Sendable () -> Handle, cancel: @escaping @Sendable (Handle) -> Void) -> Report {
    let handles = HandleBuffer<Handle>(capacity: timerCount)
    let scheduleBatch: @Sendable () -> Void = {
        for _ in 0..<timerCount { handles.append(schedule()) }
    }
    let cancelBatch: @Sendable () -> Void = {
        handles.removeAll(cancel)
    }
    let base = MemorySample.take()
    onLoop(submit, scheduleBatch)
    let cold = MemorySample.take()
    onLoop(submit, cancelBatch)
    let cancelled = MemorySample.take()
    onLoop(submit, scheduleBatch)
    let warm = MemorySample.take()
    onLoop(submit, cancelBatch)
    return Report(library: library, handleBytes: MemoryLayout<Handle>.stride,
                  base: base, cold: cold, cancelled: cancelled, warm: warm)
}

struct NoopCallback: NIOScheduledCallbackHandler, Sendable {
    func handleScheduledCallback(eventLoop: some NIOCore.EventLoop) {}
}

func runEpoll() throws {
    let group = try EpollLoop.EventLoopGroup(numberOfLoops: 1, name: "mem-epoll")
    let loop = group.loops[0]
    measure(library: "EpollLoop schedule(after:)", submit: { try! loop.execute($0) },
            schedule: { try! loop.schedule(after: .seconds(60)) {} },
            cancel: { $0.cancel() }).print()
    try group.shutdownGracefully()
}

func runNIO(callbacks: Bool) throws {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop = group.next()
    if callbacks {
        measure(library: "SwiftNIO scheduleCallback(in:)", submit: { loop.execute($0) },
                schedule: { try! loop.scheduleCallback(in: .seconds(60), handler: NoopCallback()) },
                cancel: { $0.cancel() }).print()
    } else {
        measure(library: "SwiftNIO scheduleTask(in:)", submit: { loop.execute($0) },
                schedule: { loop.scheduleTask(in: .seconds(60)) {} },
                cancel: { $0.cancel() }).print()
    }
    try group.syncShutdownGracefully()
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "epoll":
    try runEpoll()
case "nio":
    try runNIO(callbacks: false)
case "nio-callback":
    try runNIO(callbacks: true)
case nil:
    // Each library in a process of its own, so neither inherits the other's heap.
    for mode in ["epoll", "nio", "nio-callback"] {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = [mode]
        try child.run()
        child.waitUntilExit()
        guard child.terminationStatus == 0 else {
            fatalError("timer-memory \(mode) exited with status \(child.terminationStatus)")
        }
    }
default:
    print("usage: timer-memory [epoll | nio | nio-callback]")
    exit(2)
}
