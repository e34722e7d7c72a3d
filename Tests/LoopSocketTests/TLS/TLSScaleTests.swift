import Dispatch
import Foundation
import Glibc
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Counts instead of recording: at 10,000 TLS connections a full event log would be the bottleneck. Server
/// side (with a configuration): starts TLS on each accepted socket and echoes one byte. Client side: counts
/// the echoes that match the byte sent (its tag is that byte plus one).
private final class TLSCountingDelegate: GCDAsyncSocketDelegate, @unchecked Sendable {
    struct Counts {
        var accepted = 0
        var secured = 0
        var echoed = 0
        var mismatched = 0
        var disconnected = 0
        var cleanDisconnects = 0
        var firstError: String?
        var sockets: [GCDAsyncSocket] = []

        var summary: String {
            "accepted \(accepted), secured \(secured), echoed \(echoed), mismatched \(mismatched), disconnected \(disconnected) (\(cleanDisconnects) clean), first error \(firstError ?? "none")"
        }
    }

    private let waiter = ConditionWaiter()
    private var counts = Counts()
    private let serverTLS: TLSConfiguration?

    init(serverTLS: TLSConfiguration?) { self.serverTLS = serverTLS }

    var snapshot: Counts { waiter.read { counts } }

    /// Waits (bounded by `timeout`) for `predicate`; false, with nothing recorded, if it never holds.
    func wait(timeout: TimeInterval, until predicate: @escaping (Counts) -> Bool) -> Bool {
        waiter.wait(timeout: timeout) { predicate(counts) }
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        waiter.update {
            counts.accepted += 1
            counts.sockets.append(newSocket)
        }
        newSocket.startTLS(serverTLS!)
        newSocket.readData(toLength: 1, withTimeout: -1, tag: 0)
    }

    func socketDidSecure(_ sock: GCDAsyncSocket) {
        waiter.update { counts.secured += 1 }
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        if serverTLS != nil {
            sock.write(data, withTimeout: -1, tag: 0)
            sock.readData(toLength: 1, withTimeout: -1, tag: 0)  // pending, so the peer's close is seen
            waiter.update { counts.echoed += 1 }
            return
        }
        waiter.update {
            counts.echoed += 1
            if data != Data([UInt8(tag - 1)]) { counts.mismatched += 1 }
        }
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: (any Error)?) {
        let clean = err == nil || (err as? GCDAsyncSocketError)?.code == .closedError
        waiter.update {
            counts.disconnected += 1
            if clean { counts.cleanDisconnects += 1 } else if counts.firstError == nil { counts.firstError = "\(err!)" }
        }
    }

    func reset() { waiter.update { counts.sockets = [] } }
}

/// 10,000 TLS connections open at once against one server on one loop.
///
/// Each connection costs a descriptor on both ends and RLIMIT_NOFILE here is 20,000 with no privilege to
/// raise the hard limit, so the two ends cannot share one process: the clients (GCDAsyncSocket on a loop of
/// their own) run in a child process, this very test binary started with `LOOPSOCKET_TLS_SCALE_PORT` set.
final class TLSScaleTests: TLSTestCase {
    static let connections = 10_000
    /// Connections the child has in flight (connecting and handshaking) at a time.
    static let batch = 500
    /// The handshake, connect, write and read timeouts of the test's connections. Scale, not timeouts, is
    /// under test, and a batch of 500 handshakes on one loop under ThreadSanitizer on a busy 2-core machine
    /// outlasted the usual 10 s; every wait stays bounded (the batch wait below is this plus 30 s).
    static let patience: TimeInterval = 60
    private static let childVariable = "LOOPSOCKET_TLS_SCALE_PORT"
    private static let testName = "LoopSocketTests.TLSScaleTests/testTenThousandTLSConnectionsOnOneLoop"

    func testTenThousandTLSConnectionsOnOneLoop() throws {
        if let value = getenv(Self.childVariable), let port = UInt16(String(cString: value)) {
            let failure = runClients(port: port)
            Self.say(failure.map { "CHILD-FAILED: \($0)" } ?? "CHILD-OK")
            // `_exit`: the verdict is the line above; XCTest's unfinished run must not add to it.
            _exit(failure == nil ? 0 : 1)
        }
        let n = Self.connections
        var original = rlimit()
        try check("getrlimit", getrlimit(noFileLimit, &original))
        addTeardown { setrlimit(noFileLimit, &original) }
        try Self.ensureDescriptorLimit(n + 200)  // the server's side only: the clients' are the child's
        let start = Deadline.now()

        var serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverTLS.sessionResumption = false  // every connection a full handshake
        serverTLS.handshakeTimeout = .seconds(Int(Self.patience))
        let serverDelegate = TLSCountingDelegate(serverTLS: serverTLS)
        addTeardown { serverDelegate.reset() }
        let server = makeSocket(serverDelegate)
        server.options.backlog = 4096
        try server.accept(onInterface: "127.0.0.1", port: 0)
        perform(server) {}  // listening, and the loop's shared context (its reserve descriptor) made
        // Counted with the listener open: tearDown compares the whole test's descriptors once the loop is gone.
        let descriptorsAtStart = openDescriptors()

        let child = try launchPeer(Self.executablePath(), [Self.testName], environment: [Self.childVariable: "\(server.localPort)"])
        let report = try child.waitForLine(startingWith: "CHILD-", timeout: 120)
        guard report.hasPrefix("CONNECTED ") else { return XCTFail(child.transcript + "\nserver: " + serverDelegate.snapshot.summary) }
        let connected = Deadline.now()
        XCTAssertTrue(serverDelegate.wait(timeout: testTimeout) { $0.secured >= n && $0.echoed >= n }, serverDelegate.snapshot.summary)
        XCTAssertEqual(serverDelegate.snapshot.accepted, n, serverDelegate.snapshot.summary)
        XCTAssertEqual(try onLoop(loop) { self.loop.registeredDescriptorCount }, n + 1, "every connection open at once, and the listener")
        XCTAssertGreaterThanOrEqual(openDescriptors().count - descriptorsAtStart.count, n)

        child.closeStdin()  // the child disconnects every client (each sends close_notify) and exits
        XCTAssertEqual(try child.waitForExit(timeout: 60), 0, child.transcript)
        XCTAssertTrue(child.stdout.contains("CHILD-OK"), child.transcript)
        XCTAssertTrue(serverDelegate.wait(timeout: 60) { $0.disconnected >= n }, serverDelegate.snapshot.summary)
        XCTAssertEqual(serverDelegate.snapshot.cleanDisconnects, n, serverDelegate.snapshot.summary)
        XCTAssertEqual(try onLoop(loop) { self.loop.registeredDescriptorCount }, 1, "only the listener is left")
        let closed = Deadline.now()
        let descriptorsAtEnd = openDescriptors()
        XCTAssertEqual(
            descriptorsAtEnd.count, descriptorsAtStart.count,
            "descriptors before and after: \(descriptorsAtEnd.filter { descriptorsAtStart[$0.key] != $0.value })")
        server.disconnect()
        let seconds = { (from: Deadline, to: Deadline) in String(format: "%.2f", Double(to.uptimeNanoseconds - from.uptimeNanoseconds) / 1e9) }
        print("TLSScaleTests: \(n) TLS connections (full handshakes, \(Self.batch) in flight) handshaken and echoed in \(seconds(start, connected)) s, closed in \(seconds(connected, closed)) s; child: \(report)")
    }

    // MARK: The child: the clients

    /// Connects `connections` TLS clients in batches, each echoing one byte; reports, waits for stdin to end,
    /// then disconnects them all. Returns what went wrong, or nil.
    private func runClients(port: UInt16) -> String? {
        let n = Self.connections
        do { try Self.ensureDescriptorLimit(n + 200) } catch { return "\(error)" }
        let start = Deadline.now()
        let delegate = TLSCountingDelegate(serverTLS: nil)
        let clientTLS = Self.client {
            $0.serverName = "localhost"
            $0.sessionResumption = false
            $0.handshakeTimeout = .seconds(Int(Self.patience))
        }
        var clients: [GCDAsyncSocket] = []
        clients.reserveCapacity(n)
        for batchStart in stride(from: 0, to: n, by: Self.batch) {
            for i in batchStart..<min(batchStart + Self.batch, n) {
                let client = makeSocket(delegate)
                do {
                    try client.connect(toHost: "127.0.0.1", onPort: port, withTimeout: Self.patience)
                } catch { return "connect \(i): \(error)" }
                client.startTLS(clientTLS)
                let byte = UInt8(i % 251)
                client.write(Data([byte]), withTimeout: Self.patience, tag: Int(byte) + 1)
                client.readData(toLength: 1, withTimeout: Self.patience, tag: Int(byte) + 1)
                clients.append(client)
            }
            let target = clients.count
            guard delegate.wait(timeout: Self.patience + 30, until: { $0.echoed >= target || $0.disconnected > 0 }) else {
                return "batch ending at \(target) not echoed within \(Int(Self.patience) + 30) s: \(delegate.snapshot.summary)"
            }
            let counts = delegate.snapshot
            guard counts.disconnected == 0, counts.mismatched == 0 else { return "batch ending at \(target): \(counts.summary)" }
        }
        let elapsed = Double(Deadline.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        Self.say("CHILD-CONNECTED \(n) clients secured and echoed in \(String(format: "%.2f", elapsed)) s")

        var stdin = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        guard poll(&stdin, 1, 120_000) == 1 else { return "stdin did not end within 120 s" }
        for client in clients { client.disconnect() }
        guard delegate.wait(timeout: 60, until: { $0.disconnected >= n }) else {
            return "not all disconnected within 60 s: \(delegate.snapshot.summary)"
        }
        let counts = delegate.snapshot
        guard counts.cleanDisconnects == n, counts.mismatched == 0 else { return counts.summary }
        return nil
    }

    // MARK: Helpers

    /// Raises the soft RLIMIT_NOFILE to the hard limit if `needed` descriptors do not fit under it.
    private static func ensureDescriptorLimit(_ needed: Int) throws {
        var limit = rlimit()
        try check("getrlimit", getrlimit(noFileLimit, &limit))
        if limit.rlim_cur < rlim_t(needed) && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            try check("setrlimit", setrlimit(noFileLimit, &limit))
        }
        guard limit.rlim_cur >= rlim_t(needed) else {
            throw RawSocketError(call: "RLIMIT_NOFILE \(limit.rlim_cur) (hard \(limit.rlim_max)) below the \(needed) descriptors needed", errno: EMFILE)
        }
    }

    private static func executablePath() throws -> String {
        var path = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &path, path.count - 1)
        guard length > 0 else { throw RawSocketError(call: "readlink /proc/self/exe", errno: errno) }
        return String(decoding: path[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A line on stdout, written at once (the parent reads it while the child runs).
    private static func say(_ line: String) {
        let text = line + "\n"
        _ = text.withCString { Glibc.write(1, $0, strlen($0)) }
    }
}
