import Dispatch
import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// Counts instead of recording: at thousands of connections a full event log is the bottleneck.
private final class CountingDelegate: GCDAsyncSocketDelegate, @unchecked Sendable {
    struct Counts {
        var accepted = 0
        var connected = 0
        var echoed = 0
        var mismatched = 0
        var disconnected = 0
        var disconnectedWithUnexpectedError = 0
        var children: [GCDAsyncSocket] = []
    }

    private let waiter = ConditionWaiter()
    private var counts = Counts()
    var snapshot: Counts { waiter.read { counts } }

    func wait(_ what: String, file: StaticString = #filePath, line: UInt = #line, until predicate: @escaping (Counts) -> Bool) {
        let ok = waiter.wait(timeout: testTimeout) { predicate(counts) }
        if !ok {
            let current = snapshot
            XCTFail("timed out waiting for \(what): accepted \(current.accepted), connected \(current.connected), echoed \(current.echoed), disconnected \(current.disconnected)", file: file, line: line)
        }
    }

    // Server side: echo 8-byte messages.
    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        waiter.update {
            counts.accepted += 1
            counts.children.append(newSocket)
        }
        newSocket.readData(toLength: 8, withTimeout: -1, tag: 0)
    }

    // Client side.
    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        waiter.update { counts.connected += 1 }
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        if tag == 0 {
            sock.write(data, withTimeout: -1, tag: 0)
            sock.readData(toLength: 8, withTimeout: -1, tag: 0)
            return
        }
        let expected = Data(String(format: "%08d", tag).utf8)
        waiter.update {
            counts.echoed += 1
            if data != expected { counts.mismatched += 1 }
        }
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: (any Error)?) {
        let code = (err as? GCDAsyncSocketError)?.code
        waiter.update {
            counts.disconnected += 1
            if err != nil && code != .closedError { counts.disconnectedWithUnexpectedError += 1 }
        }
    }

    func reset() { waiter.update { counts.children = [] } }
}

/// Thousands of concurrent connections on one event loop.
final class ScaleTests: SocketTestCase {
    func testFiveThousandConcurrentConnectionsOnOneLoop() throws {
        let connections = 5000
        // Each connection costs two descriptors here (client and accepted side): raise the soft limit.
        var limit = rlimit()
        XCTAssertEqual(getrlimit(noFileLimit, &limit), 0)
        let original = limit
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            XCTAssertEqual(setrlimit(noFileLimit, &limit), 0)
        }
        addTeardown {
            var restore = original
            setrlimit(noFileLimit, &restore)
        }
        guard limit.rlim_cur >= rlim_t(2 * connections + 200) else {
            return XCTFail("RLIMIT_NOFILE hard limit \(limit.rlim_max) is too low for \(connections) connections")
        }

        let start = Deadline.now()
        let serverDelegate = CountingDelegate()
        let clientDelegate = CountingDelegate()
        addTeardown {
            serverDelegate.reset()
            clientDelegate.reset()
        }
        let server = makeSocket(serverDelegate)
        server.options.backlog = 4096
        try server.accept(onInterface: "127.0.0.1", port: 0)
        let port = server.localPort

        // Connect in waves so the listen queue never overflows (a dropped SYN costs a 1 s retransmit).
        var clients: [GCDAsyncSocket] = []
        clients.reserveCapacity(connections)
        let wave = 1000
        for waveStart in stride(from: 0, to: connections, by: wave) {
            for _ in waveStart..<min(waveStart + wave, connections) {
                let client = GCDAsyncSocket(delegate: clientDelegate, delegateQueue: nil, loop: loop)
                try client.connect(toHost: "127.0.0.1", onPort: port)
                clients.append(client)
            }
            let target = clients.count
            clientDelegate.wait("\(target) connected") { $0.connected >= target }
            serverDelegate.wait("\(target) accepted") { $0.accepted >= target }
        }
        XCTAssertEqual(clientDelegate.snapshot.connected, connections)
        XCTAssertEqual(serverDelegate.snapshot.accepted, connections)
        var registered = 0
        registered = try onLoop(loop) { self.loop.registeredDescriptorCount }
        XCTAssertEqual(registered, 2 * connections + 1, "every connection is open at once, plus the listener")

        // Every connection echoes a message of its own.
        for (i, client) in clients.enumerated() {
            let tag = i + 1
            client.write(Data(String(format: "%08d", tag).utf8), withTimeout: -1, tag: tag)
            client.readData(toLength: 8, withTimeout: -1, tag: tag)
        }
        clientDelegate.wait("\(connections) echoes") { $0.echoed >= connections }
        XCTAssertEqual(clientDelegate.snapshot.mismatched, 0)

        for client in clients { client.disconnect() }
        clientDelegate.wait("clients disconnected") { $0.disconnected >= connections }
        serverDelegate.wait("server sides disconnected") { $0.disconnected >= connections }
        XCTAssertEqual(clientDelegate.snapshot.disconnectedWithUnexpectedError, 0)
        XCTAssertEqual(serverDelegate.snapshot.disconnectedWithUnexpectedError, 0, "the server sides see a clean close")
        registered = try onLoop(loop) { self.loop.registeredDescriptorCount }
        XCTAssertEqual(registered, 1, "only the listener is left")

        let elapsed = Double(Deadline.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        XCTAssertLessThan(elapsed, 30, "took \(elapsed) s")
        print("ScaleTests: \(connections) connections connected, echoed and closed in \(String(format: "%.2f", elapsed)) s")
    }
}
