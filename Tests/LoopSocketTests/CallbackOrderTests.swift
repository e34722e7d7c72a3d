import Dispatch
import Foundation
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// GCDAsyncSocket's ordering promises for one socket's callbacks, each checked with the client and the server
/// on two loops and on one: callbacks in the order of the operations, a write's `didWrite` before the
/// `didRead` of the reply it caused, `disconnectAfterWriting`'s disconnect after the last `didWrite`, and
/// `socketDidDisconnect` last of all.
final class CallbackOrderTests: SocketTestCase {
    override class var loopCount: Int { 2 }

    /// The two layouts: server and client on different loops, then on the same one.
    private func eachLayout(_ body: (_ serverLoop: EventLoop, _ clientLoop: EventLoop, _ layout: String) throws -> Void) rethrows {
        try body(group.loops[0], group.loops[1], "two loops")
        try body(group.loops[0], group.loops[0], "one loop")
    }

    /// A listening socket on `loop` (its accepted sockets stay there) whose accepted sockets echo.
    private func echoServer(on loop: EventLoop, _ layout: String) throws -> GCDAsyncSocket {
        let delegate = makeDelegate("server, \(layout)")
        delegate.echoAccepted()
        let server = makeSocket(delegate, queue: makeQueue("server \(layout)"), loop: loop)
        try server.accept(onInterface: "127.0.0.1", port: 0)
        return server
    }

    /// A client on `loop`, with its callbacks on a queue of its own, connected to `server`.
    private func client(of server: GCDAsyncSocket, on loop: EventLoop, _ delegate: RecordingDelegate) throws -> GCDAsyncSocket {
        let client = makeSocket(delegate, queue: makeQueue(delegate.name), loop: loop)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        delegate.waitForConnect()
        return client
    }

    /// A client on `clientLoop` connected to an echo server on `serverLoop`, and its delegate.
    private func echoPair(_ serverLoop: EventLoop, _ clientLoop: EventLoop, _ layout: String) throws -> (GCDAsyncSocket, RecordingDelegate) {
        let server = try echoServer(on: serverLoop, layout)
        let delegate = makeDelegate("client, \(layout)")
        return (try client(of: server, on: clientLoop, delegate), delegate)
    }

    private func disconnect(_ client: GCDAsyncSocket, _ delegate: RecordingDelegate) {
        client.disconnect()
        delegate.waitForDisconnect()
    }

    /// The client's log without its connect.
    private func log(_ delegate: RecordingDelegate) -> [String] {
        delegate.events.filter { if case .connected = $0 { false } else { true } }.map(\.description)
    }

    func testCallbacksComeInTheOrderOfTheOperations() throws {
        try eachLayout { serverLoop, clientLoop, layout in
            let (client, delegate) = try echoPair(serverLoop, clientLoop, layout)
            for tag in 1...5 {
                client.write(Data(repeating: UInt8(tag), count: 1000 * tag), withTimeout: -1, tag: tag)
                client.readData(toLength: UInt(1000 * tag), withTimeout: -1, tag: 10 + tag)
            }
            delegate.waitForReadBytes(15_000)
            let writes = log(delegate).filter { $0.hasPrefix("wrote(") }
            let reads = delegate.reads().map { "\($0.1): \($0.0.count) bytes of \($0.0.first ?? 0)" }
            XCTAssertEqual(writes, (1...5).map { "wrote(tag \($0))" }, layout)
            XCTAssertEqual(reads, (1...5).map { "\(10 + $0): \(1000 * $0) bytes of \($0)" }, layout)
            disconnect(client, delegate)
        }
    }

    func testDidWriteComesBeforeTheDidReadOfItsReply() throws {
        try eachLayout { serverLoop, clientLoop, layout in
            let (client, delegate) = try echoPair(serverLoop, clientLoop, layout)
            for round in 0..<50 {
                client.write(Data("ping \(round)".utf8), withTimeout: -1, tag: round)
                client.readData(toLength: UInt("ping \(round)".utf8.count), withTimeout: -1, tag: 1000 + round)
                delegate.waitFor("the reply of round \(round)") {
                    if case .read(_, let tag) = $0 { tag == 1000 + round } else { false }
                }
            }
            let events = log(delegate)
            for round in 0..<50 {
                let wrote = events.firstIndex(of: "wrote(tag \(round))")
                let read = events.firstIndex { $0.hasSuffix("tag \(1000 + round))") && $0.hasPrefix("read(") }
                XCTAssertNotNil(wrote, "\(layout), round \(round): \(events)")
                XCTAssertLessThan(wrote ?? .max, read ?? -1, "\(layout), round \(round): didWrite before the reply's didRead")
            }
            disconnect(client, delegate)
        }
    }

    func testDisconnectAfterWritingComesAfterTheLastDidWrite() throws {
        try eachLayout { serverLoop, clientLoop, layout in
            // A server that only reads (an echo would fill the client's receive buffer, which nobody reads).
            let serverDelegate = makeDelegate("server, \(layout)")
            serverDelegate.configure { hooks in
                hooks.accept = { _, child in child.readData(withTimeout: -1, tag: 0) }
                hooks.read = { sock, _, _ in sock.readData(withTimeout: -1, tag: 0) }
            }
            let server = makeSocket(serverDelegate, queue: makeQueue("server \(layout)"), loop: serverLoop)
            try server.accept(onInterface: "127.0.0.1", port: 0)
            let delegate = makeDelegate("client, \(layout)")
            let client = try client(of: server, on: clientLoop, delegate)
            // Larger than the kernel takes at once: the disconnect waits for the server to read them.
            for tag in 1...4 { client.write(Data(repeating: 7, count: 1 << 20), withTimeout: -1, tag: tag) }
            client.disconnectAfterWriting()
            delegate.waitForDisconnect()
            let events = log(delegate)
            XCTAssertEqual(events.filter { $0.hasPrefix("wrote(") }, (1...4).map { "wrote(tag \($0))" }, layout)
            XCTAssertEqual(events.last, "disconnected(nil)", "\(layout): \(events)")
        }
    }

    func testDisconnectIsTheLastCallback() throws {
        try eachLayout { serverLoop, clientLoop, layout in
            let serverDelegate = makeDelegate("server, \(layout)")
            let server = makeSocket(serverDelegate, queue: makeQueue("server \(layout)"), loop: serverLoop)
            try server.accept(onInterface: "127.0.0.1", port: 0)
            let delegate = makeDelegate("client, \(layout)")
            let client = try client(of: server, on: clientLoop, delegate)
            let accepted = serverDelegate.waitForAccepts(1)[0]
            // Reads and writes queued, then the peer goes: every one of them is reported before the
            // disconnect, and nothing after it.
            client.readData(toLength: 10, withTimeout: -1, tag: 1)
            client.readData(toLength: 10, withTimeout: -1, tag: 2)
            client.write(Data("x".utf8), withTimeout: -1, tag: 3)
            accepted.write(Data("12345".utf8), withTimeout: -1, tag: 0)
            accepted.disconnectAfterWriting()
            delegate.waitForDisconnect()
            // Nothing more comes (two loop turns, then the delegate queue, to let anything come).
            settle(client.eventLoop)
            client.delegateQueue?.sync {}
            let events = log(delegate)
            XCTAssertEqual(events.filter { $0.hasPrefix("disconnected") }.count, 1, "\(layout): \(events)")
            XCTAssertTrue(events.last?.hasPrefix("disconnected") ?? false, "\(layout): disconnect last: \(events)")
            XCTAssertTrue(events.contains("wrote(tag 3)"), "\(layout): \(events)")
        }
    }
}
