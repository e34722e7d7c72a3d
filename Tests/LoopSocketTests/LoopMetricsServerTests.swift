import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// `LoopMetricsServer`: `GET /metrics` answers with the group's Prometheus text on a kept-alive connection,
/// other requests get their error statuses, and `close()` stops listening. Loopback and port 0 only.
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
        XCTAssertEqual(notAllowed.headers["allow"], "GET")
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
        try peer.send("GET /metrics HTTP/1.1\r\nX-Filler: " + String(repeating: "a", count: 20 * 1024) + "\r\n\r\n")
        let (answer, _) = try peer.receiveToEnd()
        XCTAssertEqual(answer.count, 0, "no answer to a head over 16 KiB, only the end of the connection")
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
}
