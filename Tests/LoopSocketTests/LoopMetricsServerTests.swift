@testable import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// `LoopMetricsServer`: `GET /metrics` answers with the group's Prometheus text on a kept-alive connection,
/// other requests get their error statuses, `close()` stops listening, and every limit of its
/// `Configuration` holds against a peer that pushes it. Loopback and port 0 only; the deadlines are
/// configured short, and each test waits for what the server does (an answer, the end of the stream), never
/// for time to pass.
final class LoopMetricsServerTests: SocketTestCase {
    override class var loopCount: Int { 2 }

    /// One response: its status line, its headers (names lowercased) and its body, read by Content-Length.
    private struct Response {
        var status: String
        var headers: [String: String]
        var body: String
    }

    private func read(_ peer: RawSocket) throws -> Response {
        var head = Data()
        while !head.suffix(4).elementsEqual("\r\n\r\n".utf8) { head += try peer.receive(exactly: 1) }
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = try XCTUnwrap(Int(headers["content-length"] ?? ""), "Content-Length in \(lines)")
        let body = length > 0 ? try peer.receive(exactly: length) : Data()
        return Response(status: lines[0], headers: headers, body: String(decoding: body, as: UTF8.self))
    }

    func testServesTheGroupsPrometheusTextOnAKeptAliveConnection() throws {
        let server = try LoopMetricsServer(group: group, port: 0)
        defer { server.close() }
        XCTAssertNotEqual(server.port, 0)
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try peer.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let page = try read(peer)
        XCTAssertEqual(page.status, "HTTP/1.1 200 OK")
        XCTAssertEqual(page.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        for loop in group.loops {
            XCTAssertTrue(page.body.contains("epoll_loop_iterations_total{loop=\"\(loop.name)\"} "), loop.name)
            XCTAssertTrue(page.body.contains("epoll_loop_lag_seconds_count{loop=\"\(loop.name)\"} "), loop.name)
        }
        // The same connection, a query string, then the error statuses; none of them closes it.
        try peer.send("GET /metrics?x=1 HTTP/1.1\r\n\r\n")
        XCTAssertEqual(try read(peer).status, "HTTP/1.1 200 OK")
        try peer.send("GET /other HTTP/1.1\r\n\r\n")
        let notFound = try read(peer)
        XCTAssertEqual(notFound.status, "HTTP/1.1 404 Not Found")
        XCTAssertEqual(notFound.body, "metrics are at /metrics\r\n")
        try peer.send("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        let notAllowed = try read(peer)
        XCTAssertEqual(notAllowed.status, "HTTP/1.1 405 Method Not Allowed")
        XCTAssertEqual(notAllowed.headers["allow"], "GET, HEAD")
        // A malformed request line gets 400 and the end of the connection.
        try peer.send("nonsense\r\n\r\n")
        XCTAssertEqual(try read(peer).status, "HTTP/1.1 400 Bad Request")
        let (rest, end) = try peer.receiveToEnd()
        XCTAssertEqual(rest.count, 0)
        XCTAssertEqual(end, .eof)
    }

    /// A request that asks for the end of the connection gets the page with `Connection: close`, then the
    /// end of the stream: `Connection: close` (any case, among other tokens), and HTTP/1.0 without keep-alive.
    func testARequestThatAsksForTheEndOfTheConnectionGetsIt() throws {
        let server = try LoopMetricsServer(group: group, port: 0)
        defer { server.close() }
        for head in ["GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n",
                     "GET /metrics HTTP/1.1\r\nconnection: te, close\r\n\r\n",
                     "GET /metrics HTTP/1.0\r\n\r\n"] {
            let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
            try peer.send(head)
            let page = try read(peer)
            XCTAssertEqual(page.status, "HTTP/1.1 200 OK", head)
            XCTAssertEqual(page.headers["connection"], "close", head)
            let (rest, end) = try peer.receiveToEnd()
            XCTAssertEqual(rest.count, 0, head)
            XCTAssertEqual(end, .eof, head)
        }
        // HTTP/1.0 that asks for keep-alive keeps its connection.
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try peer.send("GET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertNil(try read(peer).headers["connection"])
        try peer.send("GET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(try read(peer).status, "HTTP/1.1 200 OK")
    }

    func testAnOversizedRequestHeadClosesTheConnection() throws {
        let server = try LoopMetricsServer(group: group, port: 0)
        defer { server.close() }
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try peer.send("GET /metrics HTTP/1.1\r\nX-Filler: " + String(repeating: "a", count: 9 * 1024) + "\r\n\r\n")
        let (answer, _) = try peer.receiveToEnd()
        XCTAssertEqual(answer.count, 0, "no answer to a head over 8 KiB, only the end of the connection")
    }

    func testClosingStopsListening() throws {
        let server = try LoopMetricsServer(group: group, port: 0)
        let port = server.port
        server.close()
        settle(loop)
        XCTAssertThrowsError(try RawSocket(connectTo: "127.0.0.1", port: port)) { error in
            XCTAssertEqual((error as? RawSocketError)?.errno, ECONNREFUSED, "\(error)")
        }
    }

    func testAPortInUseIsAnError() throws {
        let server = try LoopMetricsServer(group: group, port: 0)
        defer { server.close() }
        XCTAssertThrowsError(try LoopMetricsServer(group: group, port: server.port)) { error in
            XCTAssertNotNil(error as? GCDAsyncSocketError, "\(error)")
        }
    }

    // MARK: HEAD, and the counters on the page

    func testHEADGetsThePagesHeadersWithoutItsBody() throws {
        let server = try LoopMetricsServer(group: group, port: 0)
        defer { server.close() }
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try peer.send("HEAD /metrics HTTP/1.1\r\n\r\n")
        var head = Data()
        while !head.suffix(4).elementsEqual("\r\n\r\n".utf8) { head += try peer.receive(exactly: 1) }
        let text = String(decoding: head, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 OK\r\n"), text)
        XCTAssertTrue(text.contains("Content-Length: "), text)
        XCTAssertFalse(text.contains("Content-Length: 0\r\n"), "the length a GET would get: \(text)")
        // No body follows: the next bytes are the next response's.
        try peer.send("HEAD /other HTTP/1.1\r\n\r\n")
        var next = Data()
        while !next.suffix(4).elementsEqual("\r\n\r\n".utf8) { next += try peer.receive(exactly: 1) }
        XCTAssertTrue(String(decoding: next, as: UTF8.self).hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        try peer.send("GET /metrics HTTP/1.1\r\n\r\n")
        XCTAssertEqual(try read(peer).status, "HTTP/1.1 200 OK")
    }

    /// What the endpoint refused shows on its own page.
    func testRefusalsAreCountedOnThePage() throws {
        let server = try LoopMetricsServer(group: group, port: 0)
        defer { server.close() }
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try peer.send("GET /other HTTP/1.1\r\n\r\nDELETE /metrics HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n")
        XCTAssertEqual(try read(peer).status, "HTTP/1.1 404 Not Found")
        XCTAssertEqual(try read(peer).status, "HTTP/1.1 405 Method Not Allowed")
        let page = try read(peer).body
        for line in ["loop_metrics_server_requests_refused_total{reason=\"not_found\"} 1",
                     "loop_metrics_server_requests_refused_total{reason=\"method_not_allowed\"} 1",
                     "loop_metrics_server_requests_refused_total{reason=\"too_large\"} 0",
                     "loop_metrics_server_connections_open 1", "loop_metrics_server_connections_refused_total 0",
                     "loop_metrics_server_pages_served_total 1", "loop_metrics_server_timeouts_total{phase=\"head\"} 0",
                     "# TYPE loop_metrics_server_timeouts_total counter"] {
            XCTAssertTrue(page.contains(line + "\n"), "\(line) in\n\(page)")
        }
        XCTAssertTrue(page.contains("epoll_loop_iterations_total{"), "the group's text comes first")
    }

    // MARK: The limits

    /// Over the cap, a connection is closed as soon as it is accepted, unanswered, and counted; once a
    /// connection ends, a new one is served.
    func testAConnectionOverTheCapIsClosedAtOnce() throws {
        let server = try LoopMetricsServer(group: group, port: 0, loop: loop,
                                           configuration: .init(maxConnections: 2))
        defer { server.close() }
        let first = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        let second = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        for peer in [first, second] {
            try peer.send("GET /metrics HTTP/1.1\r\n\r\n")
            XCTAssertEqual(try read(peer).status, "HTTP/1.1 200 OK")
        }
        let third = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        XCTAssertEqual(try third.receiveToEnd().0.count, 0, "closed unanswered")
        settle(loop)
        XCTAssertEqual(server.counters.connectionsRefused, 1)
        XCTAssertEqual(server.counters.connectionsOpen, 2)
        // The first asks to close: once its end is seen and the loop has gone round, its slot is free.
        try first.send("GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(try read(first).status, "HTTP/1.1 200 OK")
        XCTAssertEqual(try first.receiveToEnd().1, .eof)
        settle(loop)
        let fourth = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try fourth.send("GET /metrics HTTP/1.1\r\n\r\n")
        XCTAssertEqual(try read(fourth).status, "HTTP/1.1 200 OK")
        XCTAssertEqual(server.counters.connectionsRefused, 1)
    }

    func testAnOversizedHeadIsCountedAndSoIsOneAfterAKeptAliveRequest() throws {
        let server = try LoopMetricsServer(group: group, port: 0, loop: loop,
                                           configuration: .init(maxRequestHeadBytes: 1024))
        defer { server.close() }
        let filler = "X-Filler: " + String(repeating: "a", count: 1024) + "\r\n"
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try peer.send("GET /metrics HTTP/1.1\r\n" + filler + "\r\n")
        XCTAssertEqual(try peer.receiveToEnd().0.count, 0)
        // Just under the limit is served; the next head, over it, ends the connection.
        let kept = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        let fits = "GET /metrics HTTP/1.1\r\nX: " + String(repeating: "a", count: 1024 - 30) + "\r\n\r\n"
        XCTAssertLessThanOrEqual(fits.utf8.count, 1024)
        try kept.send(fits)
        XCTAssertEqual(try read(kept).status, "HTTP/1.1 200 OK")
        try kept.send("GET /metrics HTTP/1.1\r\n" + filler + "\r\n")
        XCTAssertEqual(try kept.receiveToEnd().0.count, 0)
        settle(loop)
        XCTAssertEqual(server.counters.tooLarge, 2)
        XCTAssertEqual(server.counters.connectionsOpen, 0)
    }

    /// A head that does not arrive whole within the head timeout ends the connection: the first request's,
    /// timed from the acceptance, and a kept-alive connection's next, timed from its first byte (long before
    /// the idle timeout, which would outlast the peer's own 10 s receive timeout).
    func testARequestHeadMustArriveWithinItsDeadline() throws {
        let server = try LoopMetricsServer(group: group, port: 0, loop: loop,
                                           configuration: .init(requestHeadTimeout: .milliseconds(200)))
        defer { server.close() }
        let silent = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try silent.send("GET /metrics HTTP/1.1\r\n")
        let start = ContinuousClock.now
        XCTAssertEqual(try silent.receiveToEnd().0.count, 0)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .milliseconds(150))

        let kept = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try kept.send("GET /metrics HTTP/1.1\r\n\r\n")
        XCTAssertEqual(try read(kept).status, "HTTP/1.1 200 OK")
        try kept.send("G")
        XCTAssertEqual(try kept.receiveToEnd().0.count, 0)
        settle(loop)
        XCTAssertEqual(server.counters.headTimeouts, 2)
        XCTAssertEqual(server.counters.idleTimeouts, 0)
    }

    func testAKeptAliveConnectionIdleForTooLongIsClosed() throws {
        let server = try LoopMetricsServer(group: group, port: 0, loop: loop,
                                           configuration: .init(idleTimeout: .milliseconds(200)))
        defer { server.close() }
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try peer.send("GET /metrics HTTP/1.1\r\n\r\n")
        XCTAssertEqual(try read(peer).status, "HTTP/1.1 200 OK")
        let start = ContinuousClock.now
        let (rest, end) = try peer.receiveToEnd()
        XCTAssertEqual(rest.count, 0)
        XCTAssertEqual(end, .eof)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .milliseconds(150))
        settle(loop)
        XCTAssertEqual(server.counters.idleTimeouts, 1)
        XCTAssertEqual(server.counters.headTimeouts, 0)
    }

    func testAConnectionIsClosedAfterItsLastAllowedRequest() throws {
        let server = try LoopMetricsServer(group: group, port: 0, loop: loop,
                                           configuration: .init(maxRequestsPerConnection: 3))
        defer { server.close() }
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try peer.send(String(repeating: "GET /metrics HTTP/1.1\r\n\r\n", count: 4))
        for _ in 0..<2 { XCTAssertNil(try read(peer).headers["connection"]) }
        let last = try read(peer)
        XCTAssertEqual(last.status, "HTTP/1.1 200 OK")
        XCTAssertEqual(last.headers["connection"], "close")
        let (rest, end) = try peer.receiveToEnd()
        XCTAssertEqual(rest.count, 0, "the fourth request is not answered")
        XCTAssertEqual(end, .eof)
        XCTAssertEqual(server.counters.pagesServed, 3)
    }

    /// Pipelined requests on one connection are answered one at a time, and however many a turn of the
    /// loop answers, it renders the page once at most: here with no reuse interval, each rendering in a
    /// turn of its own. (Rendering a page per request, thousands per turn, is what let a scraper hold the
    /// loop's other connections up for hundreds of milliseconds.)
    func testAPipelinedFloodRendersAtMostOnePagePerLoopTurn() throws {
        let loop = self.loop
        let turns = Locked<[UInt64]>([])
        let server = try LoopMetricsServer(port: 0, loop: loop, configuration: .init(
            responsesPerSecond: 1_000_000, pageReuseInterval: .zero)) {
            turns.withLock { $0.append(loop.iterations) }
            return "page\n"
        }
        defer { server.close() }
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        let count = 200
        try peer.send(String(repeating: "GET /metrics HTTP/1.1\r\n\r\n", count: count))
        for _ in 0..<count {
            let page = try read(peer)
            XCTAssertTrue(page.body.hasPrefix("page\n"), page.body)
        }
        let rendered = turns.withLock { $0 }
        XCTAssertEqual(Set(rendered).count, rendered.count, "two pages rendered in one turn: \(rendered)")
        XCTAssertEqual(server.counters.pagesServed, UInt64(count))
        XCTAssertEqual(server.counters.pagesRendered, UInt64(rendered.count))
    }

    /// With the default reuse interval (100 ms), a flood renders a page per interval at most.
    func testAFloodIsServedTheSamePageWithinTheReuseInterval() throws {
        let renders = Locked(0)
        let server = try LoopMetricsServer(port: 0, loop: loop, configuration: .init(responsesPerSecond: 1_000_000)) {
            renders.withLock { $0 += 1 }
            return "page\n"
        }
        defer { server.close() }
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        let start = ContinuousClock.now
        try peer.send(String(repeating: "GET /metrics HTTP/1.1\r\n\r\n", count: 500))
        for _ in 0..<500 { _ = try read(peer) }
        let elapsed = ContinuousClock.now - start
        let intervals = Int(elapsed / .milliseconds(100)) + 1
        XCTAssertLessThanOrEqual(renders.withLock { $0 }, intervals, "over \(elapsed)")
    }

    /// Responses over the budget wait for it: with 10 a second (a burst of 10), 15 pipelined requests take
    /// at least half a second, and the late ones are counted as delayed.
    func testResponsesOverTheBudgetWaitForIt() throws {
        let server = try LoopMetricsServer(group: group, port: 0, loop: loop,
                                           configuration: .init(responsesPerSecond: 10))
        defer { server.close() }
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        let start = ContinuousClock.now
        try peer.send(String(repeating: "GET /metrics HTTP/1.1\r\n\r\n", count: 15))
        for _ in 0..<15 { XCTAssertEqual(try read(peer).status, "HTTP/1.1 200 OK") }
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .milliseconds(450))
        XCTAssertGreaterThanOrEqual(server.counters.delayed, 1)
        XCTAssertLessThanOrEqual(server.counters.delayed, 5)
    }

    // MARK: Its own loop

    /// Without a loop the server starts one of its own: the page is rendered on neither of the group's
    /// loops, and `close()` stops that loop (the descriptors this test's tear-down counts come back).
    func testWithoutALoopItServesFromALoopOfItsOwn() throws {
        let group = self.group!
        let onGroupLoop = Locked<Bool?>(nil)
        let server = try LoopMetricsServer(port: 0) {
            onGroupLoop.withLock { $0 = group.currentLoop != nil }
            return group.prometheusText()
        }
        let peer = try RawSocket(connectTo: "127.0.0.1", port: server.port)
        try peer.send("GET /metrics HTTP/1.1\r\n\r\n")
        XCTAssertTrue(try read(peer).body.contains("epoll_loop_iterations_total{loop=\"\(group.loops[0].name)\"}"))
        XCTAssertEqual(onGroupLoop.withLock { $0 }, false)
        server.close()
        XCTAssertEqual(try peer.receiveToEnd().1, .eof, "close() ends the connections open")
    }

    // MARK: The request reader

    private func parse(_ head: String) -> MetricsRequest {
        Data(head.utf8).withUnsafeBytes(MetricsRequest.parse)
    }

    func testTheRequestReader() {
        XCTAssertEqual(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), .page(headOnly: false, keepAlive: true))
        XCTAssertEqual(parse("HEAD /metrics?a=b HTTP/1.0\r\n\r\n"), .page(headOnly: true, keepAlive: false))
        XCTAssertEqual(parse("GET /metrics HTTP/1.1\nconnection: Keep-Alive, CLOSE\n\n"), .page(headOnly: false, keepAlive: false))
        XCTAssertEqual(parse("GET /metricsx HTTP/1.1\r\n\r\n"), .notFound(headOnly: false, keepAlive: true))
        XCTAssertEqual(parse("OPTIONS * HTTP/1.1\r\n\r\n"), .methodNotAllowed(keepAlive: true))
        // A body the endpoint will not read ends the connection after the answer.
        XCTAssertEqual(parse("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), .methodNotAllowed(keepAlive: true))
        XCTAssertEqual(parse("POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\n"), .methodNotAllowed(keepAlive: false))
        XCTAssertEqual(parse("GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), .page(headOnly: false, keepAlive: false))
        for malformed in ["", "\r\n\r\n", "nonsense\r\n\r\n", "GET  /metrics HTTP/1.1\r\n\r\n",
                          "GET /metrics HTTP/2.0\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n",
                          "GET /metrics HTTP/1.1\r\nno colon\r\n\r\n", "GET /metrics HTTP/1.1\r\nName : v\r\n\r\n",
                          "GET /metrics HTTP/1.1\r\nA: b\rc\r\n\r\n", "GET /met\u{0}rics HTTP/1.1\r\n\r\n",
                          "G(T /metrics HTTP/1.1\r\n\r\n", "GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n"] {
            XCTAssertEqual(parse(malformed), .badRequest, malformed.debugDescription)
        }
    }
}
