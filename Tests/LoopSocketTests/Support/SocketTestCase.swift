import Dispatch
import Foundation
import Glibc
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// The base of every LoopSocket test class: a fresh event loop group per test, shut down in `tearDown`,
/// and the process's open descriptors compared before and after (after the group has shut down), so a
/// descriptor leaked or closed twice by any scenario fails the test that caused it.
class SocketTestCase: XCTestCase {
    /// How many loops the test's group has.
    class var loopCount: Int { 1 }

    private(set) var group: EventLoopGroup!
    private var descriptorsBefore: [Int32: String] = [:]
    private var delegates: [RecordingDelegate] = []
    private var queues: [DispatchQueue] = []
    private var tempDirectories: [TempDirectory] = []
    private var teardowns: [() -> Void] = []
    /// Set by tests that deliberately leave a descriptor behind (none should).
    var checksDescriptors = true

    var loop: EventLoop { group.loops[0] }

    override func setUpWithError() throws {
        try super.setUpWithError()
        Self.warmUp()
        descriptorsBefore = openDescriptors()
        group = try EventLoopGroup(numberOfLoops: Self.loopCount, name: "lsock-test")
    }

    override func tearDownWithError() throws {
        try group.shutdownGracefully(timeout: .seconds(10))
        // Sockets on the default group (GCDAsyncSocket's own initialisers) close on their loops: let those
        // loops handle what is already pending (disconnect calls, peers' FINs) before counting descriptors.
        for loop in GCDAsyncSocket.defaultGroup.loops { settle(loop) }
        // Callbacks already queued on delegate queues (the shutdown's disconnects among them) run first.
        for queue in queues { queue.sync {} }
        for action in teardowns.reversed() { action() }
        for delegate in delegates { delegate.reset() }
        delegates = []
        queues = []
        teardowns = []
        group = nil
        for directory in tempDirectories { directory.remove() }
        tempDirectories = []
        if checksDescriptors {
            // ThreadSanitizer starts its symbolizer at its first report and talks to it over two pipes it
            // keeps; LoopSocket itself never opens a pipe.
            func differences() -> (leaked: [Int32: String], closed: [Int32: String]) {
                let after = openDescriptors()
                let leaked = after.filter { descriptorsBefore[$0.key] != $0.value }
                    .filter { !(Self.underThreadSanitizer && $0.value.hasPrefix("pipe:")) }
                return (leaked, descriptorsBefore.filter { after[$0.key] != $0.value })
            }
            // The last reference to a socket (and through it to its loop's reserve descriptor) can go a moment
            // after the test's last wait returns: libdispatch releases a block on its worker thread after the
            // block ran, and a delivery block holds its socket. So the descriptors are read until they match,
            // for at most the suite's bound, and a descriptor really leaked still fails.
            var (leaked, closed) = differences()
            let deadline = Date(timeIntervalSinceNow: testTimeout)
            while !(leaked.isEmpty && closed.isEmpty) && Date() < deadline {
                usleep(1_000)
                (leaked, closed) = differences()
            }
            XCTAssertTrue(leaked.isEmpty, "descriptors left open: \(leaked.sorted { $0.key < $1.key })")
            XCTAssertTrue(closed.isEmpty, "descriptors the test did not open were closed: \(closed.sorted { $0.key < $1.key })")
        }
        try super.tearDownWithError()
    }

    // MARK: Factories (cleaned up in tearDown)

    func makeDelegate(_ name: String = "delegate") -> RecordingDelegate {
        let delegate = RecordingDelegate(name)
        delegates.append(delegate)
        return delegate
    }

    /// A serial queue tagged with `label` under ``RecordingDelegate/queueKey``, drained in tearDown.
    func makeQueue(_ label: String) -> DispatchQueue {
        let queue = DispatchQueue(label: label)
        queue.setSpecific(key: RecordingDelegate.queueKey, value: label)
        queues.append(queue)
        return queue
    }

    func makeTempDirectory() throws -> TempDirectory {
        let directory = try TempDirectory()
        tempDirectories.append(directory)
        return directory
    }

    func addTeardown(_ action: @escaping () -> Void) { teardowns.append(action) }

    /// A socket on this test's group (or on `loop`).
    func makeSocket(_ delegate: (any GCDAsyncSocketDelegate)?, queue: DispatchQueue? = nil, loop: EventLoop? = nil) -> GCDAsyncSocket {
        GCDAsyncSocket(delegate: delegate, delegateQueue: queue, loop: loop, group: loop == nil ? group : nil)
    }

    /// A listening socket on `interface` and an OS-chosen port.
    func makeServer(
        _ delegate: RecordingDelegate, interface: String = "127.0.0.1", queue: DispatchQueue? = nil,
        configure: (GCDAsyncSocket) -> Void = { _ in }
    ) throws -> GCDAsyncSocket {
        let server = makeSocket(delegate, queue: queue)
        configure(server)
        try server.accept(onInterface: interface, port: 0)
        XCTAssertNotEqual(server.localPort, 0)
        return server
    }

    /// A LoopSocket client connected to a raw (blocking) peer the test drives by hand.
    func connectToRawPeer(
        _ delegate: RecordingDelegate, host: String = "127.0.0.1", queue: DispatchQueue? = nil,
        listenerReceiveBuffer: Int32? = nil, configure: (GCDAsyncSocket) -> Void = { _ in }
    ) throws -> (GCDAsyncSocket, RawSocket) {
        let listener = try RawListener(host: host, receiveBufferSize: listenerReceiveBuffer)
        defer { listener.close() }
        let client = makeSocket(delegate, queue: queue)
        configure(client)
        try client.connect(toHost: host, onPort: listener.port, withTimeout: testTimeout)
        let peer = try listener.accept()
        delegate.waitForConnect()
        return (client, peer)
    }

    /// A raw client connected to a LoopSocket server; returns the server-side accepted socket.
    func rawClient(to server: GCDAsyncSocket, delegate: RecordingDelegate, host: String = "127.0.0.1") throws -> (RawSocket, GCDAsyncSocket) {
        let before = delegate.accepted.count
        let raw = try RawSocket(connectTo: host, port: server.localPort)
        let accepted = delegate.waitForAccepts(before + 1)
        guard accepted.count > before else { throw TestTimeout(what: "accept") }
        return (raw, accepted[before])
    }

    // MARK: Loop helpers

    /// Runs `body` on `loop` and waits for it (bounded).
    func onLoop<T>(_ loop: EventLoop, _ body: @escaping () -> T) throws -> T {
        let result = Locked<T?>(nil)
        let done = Signal()
        let box = UncheckedSendable(body)
        try loop.execute {
            result.value = box.value()
            done.fire()
        }
        try done.waitOrThrow("a task on \(loop.name)")
        return result.value!
    }

    /// `sock.perform(body)` (GCDAsyncSocket's `performBlock:`), called from a helper thread so the wait for it
    /// is bounded: a loop that never runs the block fails the test instead of hanging it.
    func perform(_ sock: GCDAsyncSocket, file: StaticString = #filePath, line: UInt = #line, _ body: @escaping () -> Void) {
        let done = onNewThread { sock.perform(body) }
        XCTAssertTrue(done.wait(), "perform did not return within \(Int(testTimeout)) s", file: file, line: line)
    }

    /// Waits until `loop` has gone round twice more: whatever the socket had queued for itself (deferred
    /// pumps, callbacks) has run by then.
    func settle(_ loop: EventLoop, file: StaticString = #filePath, line: UInt = #line) {
        let done = Signal()
        do {
            try loop.execute { loop.executeOnLoop { loop.executeOnLoop { done.fire() } } }
        } catch {
            XCTFail("loop refused a task: \(error)", file: file, line: line)
            return
        }
        XCTAssertTrue(done.wait(), "loop did not go round", file: file, line: line)
    }

    /// Settles every loop of the group (and then `queue`, if given).
    func settleAll(queue: DispatchQueue? = nil, file: StaticString = #filePath, line: UInt = #line) {
        for loop in group.loops { settle(loop, file: file, line: line) }
        queue?.sync {}
    }

    /// The loop's iteration counter (internal to EpollLoop).
    func iterations(of loop: EventLoop) throws -> UInt64 {
        try onLoop(loop) { loop.iterations }
    }

    /// Whether the process runs with ThreadSanitizer (its runtime is linked in).
    static let underThreadSanitizer = dlsym(nil, "__tsan_init") != nil

    // MARK: One-time warm-up

    nonisolated(unsafe) private static var warmedUp = false
    private static let warmUpLock = NSLock()

    /// Opens, once, every descriptor the process keeps for good (Dispatch's own, the default loop group's),
    /// so that they do not show up as leaks of whichever test happens to trigger them first.
    static func warmUp() {
        warmUpLock.lock()
        defer { warmUpLock.unlock() }
        guard !warmedUp else { return }
        warmedUp = true
        let done = Signal()
        DispatchQueue.global().async { done.fire() }
        done.wait()
        let queue = DispatchQueue(label: "warm-up")
        queue.async { done.fire() }
        done.wait()
        queue.asyncAfter(deadline: .now() + .milliseconds(1)) { done.fire() }
        done.wait()
        // The default group (used by GCDAsyncSocket's own initialisers) and each loop's shared context.
        for loop in GCDAsyncSocket.defaultGroup.loops {
            try? loop.execute {
                _ = LoopContext.of(loop)
                done.fire()
            }
            done.wait()
        }
        _ = try? GCDAsyncSocket.lookupHost("localhost", port: 1)
        // XCTest's waiter runs the main run loop, which opens its descriptors on first use.
        let expectation = XCTestExpectation(description: "warm-up")
        DispatchQueue.main.async { expectation.fulfill() }  // Only a running main run loop delivers this.
        _ = XCTWaiter.wait(for: [expectation], timeout: testTimeout)
        _ = FileManager.default.temporaryDirectory
    }
}
