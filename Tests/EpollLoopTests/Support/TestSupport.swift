import Dispatch
import Foundation
import Glibc
import SharedTestSupport
import XCTest

@testable import EpollLoop

/// Every blocking wait in the suite is bounded by this.
let testTimeout: DispatchTimeInterval = .seconds(10)

/// Whether ThreadSanitizer instruments this process (`swift test --sanitize=thread`): it slows lock-heavy code
/// five- to fifteen-fold, so stress tests shrink their volume (never their checks) to stay inside their bounds.
let runningUnderThreadSanitizer: Bool = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

/// A failed bounded wait, or a result that never arrived.
struct TestTimeout: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out after 10 s waiting for \(what)" }
}

/// A value shared between the test thread, loop threads and producer threads, behind a mutex (the runtime's
/// pthread-based lock, whose ordering ThreadSanitizer understands, unlike `Synchronization.Mutex`'s).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: EpollLoop.Locked<Value>

    init(_ value: Value) { mutex = EpollLoop.Locked(value) }

    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R {
        mutex.withLock { body(&$0) }
    }

    var value: Value {
        get { mutex.withLock { $0 } }
        set { mutex.withLock { $0 = newValue } }
    }
}

extension DispatchSemaphore {
    /// Waits at most ``testTimeout``; throws ``TestTimeout`` otherwise.
    func waitOrThrow(_ what: String) throws {
        if wait(timeout: .now() + testTimeout) == .timedOut { throw TestTimeout(what: what) }
    }
}

/// Runs `body` on `loop` and waits (bounded) for its result; errors thrown by `body` are rethrown here.
func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () throws -> T) throws -> T {
    let result = Locked<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    try loop.execute {
        let outcome = Result { try body() }
        result.value = outcome
        done.signal()
    }
    try done.waitOrThrow("a task on loop '\(loop.name)'")
    return try result.value!.get()
}

/// An event loop embedded in a thread the test creates, as an application would.
final class ThreadedLoop: Sendable {
    let loop: EventLoop
    /// What `run()` threw, once it has returned.
    let runResult = Locked<Result<Void, EventLoopError>?>(nil)
    private let exited = DispatchSemaphore(value: 0)

    init(name: String = "test-loop", maxEventsPerWait: Int = 1024) throws {
        loop = try EventLoop(name: name, maxEventsPerWait: maxEventsPerWait)
    }

    /// Starts a thread that runs the loop until it shuts down.
    func start() {
        let thread = Thread { [loop, runResult, exited] in
            let result = Result { () throws(EventLoopError) in try loop.run() }
            runResult.value = result
            exited.signal()
        }
        thread.start()
    }

    /// Waits (bounded) until `run()` has returned.
    func waitForExit() throws {
        try exited.waitOrThrow("run() on '\(loop.name)' to return")
    }

    /// Shuts the loop down and waits for its thread's `run()` to return.
    func stop() throws {
        try loop.shutdownGracefully(timeout: .seconds(10))
        try waitForExit()
    }
}

// MARK: Descriptors

/// Whether `fd` names an open descriptor of this process.
func isOpen(_ fd: Int32) -> Bool {
    fcntl(fd, F_GETFD) != -1
}

/// Whether `fd` is closed: `fcntl(F_GETFD)` fails with `EBADF`.
func isClosed(_ fd: Int32) -> Bool {
    fcntl(fd, F_GETFD) == -1 && errno == EBADF
}

/// The number of open descriptors of this process.
func openDescriptorCount() -> Int { openDescriptors().count }

/// The whole of a small file (for /proc), or `nil`.
func readSmallFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// A nonblocking pipe (read end, write end) from the runtime's syscall seam.
func makePipe() throws -> (read: Int32, write: Int32) {
    let (r, w) = try Syscall.pipe()
    return (r, w)
}

/// Writes `count` bytes into a pipe's write end; returns how many were written.
@discardableResult
func writeBytes(_ fd: Int32, count: Int = 1, value: UInt8 = 0x2A) -> Int {
    let bytes = [UInt8](repeating: value, count: count)
    return bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}

/// Reads whatever a nonblocking descriptor has (up to 64 KiB); -1 on error (including EAGAIN).
func readAvailable(_ fd: Int32) -> Int {
    var buffer = [UInt8](repeating: 0, count: 65536)
    return buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
}

/// Puts a fresh open descriptor (a pipe's read end) at number `fd`, which must be free; closes the pipe's write end.
/// Used to show that a descriptor number reused after a close is never touched by the loop again.
func occupy(_ fd: Int32) throws {
    let (r, w) = try makePipe()
    if r != fd {
        guard dup2(r, fd) == fd else { throw SyscallError(.dup, errno: Errno(rawValue: errno)) }
        close(r)
    }
    close(w)
}

// MARK: I/O handlers

/// An `IOEventHandler` whose behaviour is a closure; created and used on the loop only.
final class ClosureHandler: IOEventHandler {
    let onIO: (IOEvents) -> Void
    let onShutdown: () -> Void

    init(onShutdown: @escaping () -> Void = {}, onIO: @escaping (IOEvents) -> Void) {
        self.onIO = onIO
        self.onShutdown = onShutdown
    }

    func handleIO(_ events: IOEvents) { onIO(events) }
    func loopWillShutDown() { onShutdown() }
}

// MARK: /proc

/// The kernel's view of the calling thread: (name from comm, last CPU, allowed CPUs list).
struct ThreadInfo: Sendable, Equatable {
    var name: String
    var cpu: Int
    var allowedCPUs: String
}

/// Reads the calling thread's name, current CPU and affinity from /proc/thread-self.
func currentThreadInfo() -> ThreadInfo? {
    guard let comm = readSmallFile("/proc/thread-self/comm"),
          let stat = readSmallFile("/proc/thread-self/stat"),
          let status = readSmallFile("/proc/thread-self/status"),
          let close = stat.lastIndex(of: ")") else { return nil }
    // Fields after the ")" of comm start at field 3 (state); field 39 is the CPU last run on.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 36, let cpu = Int(fields[36]) else { return nil }
    let allowed = status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") }
        .map { String($0.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces)) } ?? ""
    return ThreadInfo(name: String(comm.dropLast(comm.hasSuffix("\n") ? 1 : 0)), cpu: cpu, allowedCPUs: allowed)
}

/// The CPUs this process may run on, ascending (parsed from a `Cpus_allowed_list` such as "0-3,8").
func allowedCPUs(_ list: String) -> [Int] {
    list.split(separator: ",").flatMap { part -> [Int] in
        let bounds = part.split(separator: "-").compactMap { Int($0) }
        if bounds.count == 2 { return Array(bounds[0]...bounds[1]) }
        return bounds
    }
}
