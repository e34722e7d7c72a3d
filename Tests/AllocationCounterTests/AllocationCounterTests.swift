import Foundation
import Glibc
import SharedTestSupport
import XCTest

/// Allocations per operation of the example servers and of loadtest, counted by a malloc hook preloaded into
/// them (alloc-counter.c), checked against allocation-limits.json: a change that adds an allocation per round
/// trip fails here, with the workload and the count, where a timing run on a shared machine could not see it.
///
/// Each workload runs a warm-up, then three windows of `count` operations; the counter is read before and
/// after each, so start-up and warm-up cancel out (see ``AllocationLimits/check(_:_:file:line:)`` for how the
/// windows are judged). The servers run one loop, driven by one blocking client in this process, so an
/// operation's allocations happen before its reply arrives; what the server does after sending it (releasing
/// the buffers, re-arming the read) spills over a window's edge by at most one operation's worth, which
/// `count` divides down to far below the tolerance.
final class AllocationCounterTests: XCTestCase {
    override func setUpWithError() throws {
        if case .failure(let reason) = AllocationHook.library { throw reason }
    }

    override class func tearDown() {
        AllocationHook.remove()
        super.tearDown()
    }

    /// Runs `warmup` operations, then ``AllocationLimits/windows`` windows of `count`, reading `process`'s
    /// counter around each window, each reading after `settle` (so each window holds one `settle` too); the
    /// allocations per operation of each window.
    private func perOperation(_ process: CountedProcess, warmup: Int, count: Int, settle: () throws -> Void = {},
                              _ operation: () throws -> Void) throws -> [Double] {
        for _ in 0..<warmup { try operation() }
        try settle()
        var readings = [process.allocations]
        for _ in 0..<AllocationLimits.windows {
            for _ in 0..<count { try operation() }
            try settle()
            readings.append(process.allocations)
        }
        return zip(readings, readings.dropFirst()).map { Double($1 - $0) / Double(count) }
    }

    /// Starts the example server `name` on a free loopback port with one loop (and `arguments`); it and its port.
    private func startServer(_ name: String, _ arguments: [String] = []) throws -> (CountedProcess, UInt16) {
        let server = try CountedProcess(name, ["--port", "0", "--loops", "1"] + arguments)
        let port = try server.port(announcedWith: name == "udp-echo-server" ? "bound to" : "listening")
        return (server, port)
    }

    /// Stops `server`, which must leave with status 0.
    private func stop(_ server: CountedProcess, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(server.stop(), 0, "stderr: \(server.child.standardError)", file: file, line: line)
    }

    /// 64 bytes sent and echoed back on one connection.
    private func echoRoundTrips(_ name: String) throws {
        let (server, port) = try startServer(name)
        defer { stop(server) }
        let client = try LoopbackClient(port: port)
        let message = [UInt8](repeating: 0x61, count: 64)
        let windows = try perOperation(server, warmup: 200, count: 1000) {
            try client.send(message)
            guard try client.receive(exactly: message.count) == message else { throw UnexpectedReply(sent: message.count) }
        }
        try AllocationLimits.check("\(name) round trip", windows)
    }

    /// A connection accepted, one 16-byte round trip, closed by the client (FIN). Before each reading, two
    /// round trips on a connection that stays open: the second needs the loop to have come back from the
    /// batch that held the last close, so that connection's teardown falls inside the window.
    private func churnedConnections(_ name: String) throws {
        let (server, port) = try startServer(name)
        defer { stop(server) }
        let probe = try LoopbackClient(port: port)
        let message = [UInt8](repeating: 0x62, count: 16)
        func roundTrip(_ client: LoopbackClient) throws {
            try client.send(message)
            guard try client.receive(exactly: message.count) == message else { throw UnexpectedReply(sent: message.count) }
        }
        let windows = try perOperation(server, warmup: 50, count: 300, settle: { for _ in 0..<2 { try roundTrip(probe) } }) {
            try roundTrip(try LoopbackClient(port: port))
        }
        try AllocationLimits.check("\(name) churned connection", windows)
    }

    func testEchoServerRoundTrip() throws { try echoRoundTrips("echo-server") }

    func testAsyncEchoServerRoundTrip() throws { try echoRoundTrips("async-echo-server") }

    func testEchoServerChurnedConnection() throws { try churnedConnections("echo-server") }

    func testAsyncEchoServerChurnedConnection() throws { try churnedConnections("async-echo-server") }

    /// GET / and its 200 "hello", keep-alive, on one plaintext connection.
    func testHTTPHelloRequest() throws {
        let (server, port) = try startServer("http-hello")
        defer { stop(server) }
        try httpRequests(on: LoopbackClient(port: port), of: server, workload: "http-hello request")
    }

    /// The same over TLS, the handshake done in the warm-up.
    func testHTTPHelloTLSKeepAliveRequest() throws {
        let (server, port) = try startServer("http-hello", [
            "--tls-cert", TestCertificates.path("server.pem"), "--tls-key", TestCertificates.path("server.key"),
        ])
        defer { stop(server) }
        try httpRequests(on: TLSClient(port: port), of: server, workload: "http-hello TLS keep-alive request")
    }

    private func httpRequests(on client: ByteStream, of server: CountedProcess, workload: String) throws {
        let request = Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        let windows = try perOperation(server, warmup: 100, count: 500) {
            try client.send(request)
            let response = try client.receiveHTTPResponse()
            guard response.hasPrefix("HTTP/1.1 200"), response.hasSuffix("hello") else {
                throw UnexpectedReply(sent: request.count, reply: response)
            }
        }
        try AllocationLimits.check(workload, windows)
    }

    /// A 64-byte datagram sent and echoed back.
    func testUDPEchoServerDatagram() throws {
        let (server, port) = try startServer("udp-echo-server")
        defer { stop(server) }
        let client = try UDPClient(port: port)
        let datagram = [UInt8](repeating: 0x63, count: 64)
        let windows = try perOperation(server, warmup: 200, count: 1000) { try client.echo(datagram) }
        try AllocationLimits.check("udp-echo-server datagram", windows)
    }

    /// `loadtest echo` with one connection against an echo server in this process (blocking, one thread): the
    /// client's allocations per 64-byte request. Each operation answers the previous request and waits for the
    /// next, so the counter is read while loadtest waits for a reply; the run is stopped after the windows.
    func testLoadtestEchoRequest() throws {
        let listener = try LoopbackListener()
        let loadtest = try CountedProcess("loadtest", [
            "echo", "--port", String(listener.port), "--connections", "1", "--loops", "1", "--size", "64",
            "--duration", "300s", "--warmup", "0", "--quiet",
        ])
        defer { loadtest.stop() }
        guard let connection = try? listener.accept() else {
            throw MeasurementFailure("loadtest did not connect: \(loadtest.child.standardError)")
        }
        var request = try connection.receive(exactly: 64)
        let windows = try perOperation(loadtest, warmup: 500, count: 2000) {
            try connection.send(request)
            request = try connection.receive(exactly: 64)
        }
        try AllocationLimits.check("loadtest echo request", windows)
    }

    /// `loadtest http` with one connection against an HTTP responder in this process (blocking, one thread):
    /// the client's allocations per keep-alive request, its response framed from the bytes where they lie.
    func testLoadtestHTTPRequest() throws {
        let listener = try LoopbackListener()
        let loadtest = try CountedProcess("loadtest", [
            "http", "--url", "http://127.0.0.1:\(listener.port)/", "--connections", "1", "--loops", "1",
            "--duration", "300s", "--warmup", "0", "--quiet",
        ])
        defer { loadtest.stop() }
        guard let connection = try? listener.accept() else {
            throw MeasurementFailure("loadtest did not connect: \(loadtest.child.standardError)")
        }
        // The first request read to its end; every later one is the same bytes.
        var head: [UInt8] = []
        while !head.ends(with: Array("\r\n\r\n".utf8)) {
            guard head.count < 8192 else { throw MeasurementFailure("no request head within 8 KiB") }
            head += try connection.receive(exactly: 1)
        }
        let response = Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".utf8)
        let windows = try perOperation(loadtest, warmup: 500, count: 2000) {
            try connection.send(response)
            let next = try connection.receive(exactly: head.count)
            guard next == head else {
                throw UnexpectedReply(sent: response.count, reply: String(decoding: next, as: UTF8.self))
            }
        }
        try AllocationLimits.check("loadtest http request", windows)
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
