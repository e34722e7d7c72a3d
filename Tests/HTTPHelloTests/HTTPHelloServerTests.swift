import EpollLoop
import Foundation
import Glibc
@testable import HTTPHello
import LoopSocket
import SharedTestSupport
import XCTest

/// http-hello's tests talk to it through the blocking client the test targets share.
typealias HTTPTestClient = LoopbackClient

/// http-hello's connection handling over loopback: one response per request, in order, and the
/// connection's end where HTTP says.
final class HTTPHelloServerTests: XCTestCase {
    private var group: EventLoopGroup!
    private var listener: GCDAsyncSocket!
    private var server: HTTPHelloServer!

    private func start(_ configure: (inout HTTPHelloServer.Configuration) -> Void = { _ in }) throws -> UInt16 {
        var configuration = HTTPHelloServer.Configuration()
        configure(&configuration)
        group = try EventLoopGroup(numberOfLoops: 1, name: "http-test")
        server = HTTPHelloServer(configuration: configuration)
        listener = GCDAsyncSocket(delegate: server, delegateQueue: nil, loop: group.loops[0], group: group)
        try listener.accept(onInterface: "127.0.0.1", port: 0)
        return listener.localPort
    }

    /// A default server whose connections a ``ConnectionWatcher`` keeps track of.
    private func startWatched() throws -> ConnectionWatcher {
        group = try EventLoopGroup(numberOfLoops: 1, name: "http-test")
        server = HTTPHelloServer()
        let watcher = ConnectionWatcher(server)
        listener = GCDAsyncSocket(delegate: watcher, delegateQueue: nil, loop: group.loops[0], group: group)
        try listener.accept(onInterface: "127.0.0.1", port: 0)
        return watcher
    }

    override func tearDownWithError() throws {
        listener?.disconnect()
        try group?.shutdownGracefully(timeout: .seconds(10))
    }

    private let responses = HTTPResponses()
    private var ok: Data { responses.ok }
    private var okClose: Data { responses.okClose }

    func testHEADHasTheHeadOfGETAndNoBody() throws {
        let client = try HTTPTestClient(port: try start())
        try client.send("HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let expected = responses.head + ok
        XCTAssertEqual(String(decoding: try client.receive(expected.count), as: UTF8.self), String(decoding: expected, as: UTF8.self))
        XCTAssertTrue(String(decoding: responses.head, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"))
        XCTAssertFalse(String(decoding: responses.head, as: UTF8.self).hasSuffix("hello"))
    }

    /// The case: a POST whose body looks like the end of a head gets one response, and the
    /// connection stays in step.
    func testContentLengthBodyIsReadPast() throws {
        let client = try HTTPTestClient(port: try start())
        try client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\nab\r\n\r\ncd")
        try client.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let (all, reset) = try client.receiveToEnd()
        XCTAssertFalse(reset)
        XCTAssertEqual(all, ok + okClose, String(decoding: all, as: UTF8.self))
    }

    func testChunkedBodyIsReadPast() throws {
        let client = try HTTPTestClient(port: try start())
        try client.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nc\r\nHellO world1\r\n0\r\n\r\n")
        try client.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(try client.receiveToEnd().data, ok + okClose)
    }

    func testExpectContinue() throws {
        let client = try HTTPTestClient(port: try start())
        try client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertEqual(try client.receive(responses.continue.count), responses.continue)
        try client.send("hello")
        XCTAssertEqual(try client.receive(ok.count), ok)
    }

    /// Pipelined requests, with a body and a HEAD among them, come back in order, one response each.
    func testPipelinedRequestsAreAnsweredInOrder() throws {
        let client = try HTTPTestClient(port: try start())
        var requests = ""
        var expected = Data()
        for i in 0..<300 {
            switch i % 3 {
            case 0: requests += "GET /\(i) HTTP/1.1\r\nHost: x\r\n\r\n"; expected += ok
            case 1: requests += "HEAD /\(i) HTTP/1.1\r\nHost: x\r\n\r\n"; expected += responses.head
            default: requests += "POST /\(i) HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"; expected += ok
            }
        }
        requests += "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        expected += okClose
        try client.send(requests)
        XCTAssertEqual(try client.receiveToEnd().data, expected)
    }

    func testHTTP10ClosesUnlessKeepAlive() throws {
        let port = try start()
        let plain = try HTTPTestClient(port: port)
        try plain.send("GET / HTTP/1.0\r\n\r\n")
        XCTAssertEqual(try plain.receiveToEnd().data, okClose)

        let kept = try HTTPTestClient(port: port)
        try kept.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(try kept.receive(responses.okKeepAlive10.count), responses.okKeepAlive10)
        try kept.send("GET / HTTP/1.0\r\n\r\n")
        XCTAssertEqual(try kept.receiveToEnd().data, okClose)
    }

    /// A head over the limit gets 431 and then the end of the stream, also when the client goes on
    /// sending (100 KB), not a reset that could destroy the reply.
    func testOversizedHeadGets431BeforeTheClose() throws {
        let port = try start()
        for size in [10_000, 100_000] {
            let client = try HTTPTestClient(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: size) + "\r\n\r\n")
            let (data, reset) = try client.receiveToEnd()
            XCTAssertEqual(data, HTTPResponses.failure(.headerTooLarge), "size \(size): \(String(decoding: data, as: UTF8.self))")
            XCTAssertFalse(reset, "size \(size)")
        }
    }

    /// h1spec's refused requests, over the wire: a 4xx/5xx status line, then the close.
    func testMalformedRequestsGetAnErrorThenTheClose() throws {
        let port = try start()
        let cases: [(String, String)] = [
            ("GET / \r\n\r\n", "400"),
            ("GET / HTTP/1.1\r\nHost: example.com\r\nX-Invalid[]: test\r\n\r\n", "400"),
            ("GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", "400"),
            ("GET / HTTP/1.1\r\nHost: example.com\r\nHost: example.org\r\n\r\n", "400"),
            ("GET / HTTP/1.1\r\nHost: example.com\r\nContent-Length: -1234\r\n\r\n", "400"),
            ("GET / HTTP/9.9\r\nHost: example.com\r\n\r\n", "505"),
            ("Extra lineGET / HTTP/1.1\r\nHost: example.com\r\n\r\n", "400"),
            ("GET / HTTP/1.1\r\nHost: example.com\r\n\rSome-Header: Test\r\n\r\n", "400"),
            ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "400"),
            ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", "501"),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", "400"),
            ("GET / HTTP/1.1\r\nHost: x\r\n" + String(repeating: "X-A: b\r\n", count: 100) + "\r\n", "431"),
        ]
        for (request, status) in cases {
            let client = try HTTPTestClient(port: port)
            try client.send(request)
            let (data, reset) = try client.receiveToEnd()
            let text = String(decoding: data, as: UTF8.self)
            XCTAssertTrue(text.hasPrefix("HTTP/1.1 \(status) "), "\(request.debugDescription) -> \(text.debugDescription)")
            XCTAssertTrue(text.contains("Connection: close\r\n"))
            XCTAssertFalse(reset)
        }
    }

    /// A line that is not a request, ended by CRLF or a bare LF, is answered 400 at once, not at the header
    /// or idle timeout (an hour here, so only the early answer can arrive within the client's bounded wait); a
    /// request whose lines end in bare LFs is served.
    func testABadRequestLineIsAnsweredAtOnceAndBareLineFeedsAreServed() throws {
        let port = try start { $0.idleTimeout = 3600 }
        for line in [String(repeating: "A", count: 100) + "\n", "GET /\r\n"] {
            let client = try HTTPTestClient(port: port)
            try client.send(line)
            let (data, reset) = try client.receiveToEnd()
            XCTAssertEqual(data, HTTPResponses.failure(.badRequest), line.debugDescription)
            XCTAssertFalse(reset)
        }
        let client = try HTTPTestClient(port: port)
        try client.send("GET / HTTP/1.0\n\n")
        XCTAssertEqual(try client.receiveToEnd().data, okClose)
    }

    /// A flood of empty lines is used up as it arrives, not kept: what the connection holds after 768 KiB of
    /// them and the start of a request is that start alone (without the LF that ends the last empty line);
    /// the request is then served.
    func testEmptyLinesBeforeARequestAreNotBuffered() throws {
        let watcher = try startWatched()
        let client = try HTTPTestClient(port: listener.localPort)
        try client.send(String(repeating: "\r\n", count: 1 << 18) + String(repeating: "\n", count: 1 << 18))
        try client.send("\r")  // halfway through a CRLF
        let start = "\nGET / HTTP/1.1\r\nHost: x\r\n"
        try client.send(start)
        let loop = group.loops[0]
        // The connection has read everything once its buffer holds the start of the request (polled, bounded).
        var held = 0
        let deadline = Date().addingTimeInterval(10)
        repeat {
            let done = DispatchSemaphore(value: 0)
            let box = HeldBytes()
            try loop.execute {
                box.count = (watcher.connection(0) as? HTTPHelloConnection)?.bufferedByteCount ?? -1
                done.signal()
            }
            XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
            held = box.count
            if held >= start.utf8.count - 1 { break }
            usleep(1_000)
        } while Date() < deadline
        XCTAssertEqual(held, start.utf8.count - 1, "the empty lines were kept")
        try client.send("\r\n")
        XCTAssertEqual(try client.receive(ok.count), ok)
    }

    /// The head deadline runs from a head's first byte and is not restarted by reads: a client that sends a
    /// byte every 50 ms, well inside the idle timeout, gets 408 and the close once the deadline has passed.
    func testATricklingHeadGets408AtItsDeadline() throws {
        let client = try HTTPTestClient(port: try start { $0.headTimeout = 0.5; $0.idleTimeout = 10 })
        let began = Date()
        try client.send("GET / HTTP/1.1\r\nX-Slow: ")
        var pending = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
        while poll(&pending, 1, 50) == 0, Date().timeIntervalSince(began) < 10 {
            try client.send("a")
        }
        let (data, _) = try client.receiveToEnd()
        XCTAssertEqual(data, HTTPResponses.failure(.requestTimeout), String(decoding: data, as: UTF8.self))
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(began), 0.5)
        XCTAssertEqual(server.refusals.count(.requestTimeout), 1)
        XCTAssertTrue(server.prometheusText().contains("http_hello_refused_total{reason=\"head_timeout\",status=\"408\"} 1\n"),
                      server.prometheusText())
    }

    /// A head left incomplete and silent gets 408 when the connection times out (the idle timeout first
    /// here); a connection that sent only empty lines is closed without a response, as an idle one is.
    func testASilentPartialHeadGets408() throws {
        let port = try start { $0.headTimeout = 10; $0.idleTimeout = 0.2 }
        let client = try HTTPTestClient(port: port)
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n")
        XCTAssertEqual(try client.receiveToEnd().data, HTTPResponses.failure(.requestTimeout))
        let blank = try HTTPTestClient(port: port)
        try blank.send("\r\n\r\n")
        XCTAssertEqual(try blank.receiveToEnd().data, Data())
    }

    /// Every refusal is counted by reason on the server's metrics text.
    func testRefusalsAreCounted() throws {
        let port = try start { $0.maxHeaderFields = 2 }
        for request in ["GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\n\r\n", "BAD\r\n", "GET / HTTP/2.0\r\n\r\n"] {
            let client = try HTTPTestClient(port: port)
            try client.send(request)
            _ = try client.receiveToEnd()
        }
        let text = server.prometheusText()
        XCTAssertTrue(text.contains("# TYPE http_hello_refused_total counter\n"), text)
        for line in ["reason=\"too_many_fields\",status=\"431\"} 1", "reason=\"bad_request\",status=\"400\"} 1",
                     "reason=\"version\",status=\"505\"} 1", "reason=\"head_too_large\",status=\"431\"} 0"] {
            XCTAssertTrue(text.contains("http_hello_refused_total{" + line + "\n"), "\(line) in \(text)")
        }
    }

    /// The head deadline and the scan position live in the connection's phase, which still fits the 16 bytes
    /// that keep an idle connection's object at 64 (the header, four references and the phase).
    func testThePhaseStaysWithinSixteenBytes() {
        XCTAssertLessThanOrEqual(MemoryLayout<HTTPHelloConnection.Phase>.size, 16)
        XCTAssertLessThanOrEqual(MemoryLayout<HTTPHeadParser.Scan>.size, 5)
    }

    /// A connection that sends nothing is closed after the idle timeout.
    func testIdleConnectionIsClosed() throws {
        let client = try HTTPTestClient(port: try start { $0.idleTimeout = 0.1 })
        XCTAssertEqual(try client.receiveToEnd().data, Data())
        // And one idle between requests too.
        let second = try HTTPTestClient(port: listener.localPort)
        try second.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(try second.receiveToEnd().data, ok)
    }

    /// Each connection's state lives exactly as long as its socket: it is freed when the client closes,
    /// when the server closes after `Connection: close`, and after a refusal; never before its response.
    func testConnectionStateIsFreedWhenTheConnectionEnds() throws {
        let watcher = try startWatched()
        let requests = [
            "GET / HTTP/1.1\r\nHost: x\r\n\r\n",                      // the client closes
            "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",  // the server closes
            "GET / HTTP/9.9\r\nHost: x\r\n\r\n",                      // refused (505), then closed
        ]
        for (index, request) in requests.enumerated() {
            let client = try HTTPTestClient(port: listener.localPort)
            try client.send(request)
            XCTAssertGreaterThan(try client.receive(5).count, 0, "a response first")
            // Only the first connection stays open until the client closes it; the other two are closed by
            // the server right after the response, so their state may already be gone when it arrives.
            if index == 0 { XCTAssertTrue(watcher.isAlive(index), "alive while the socket is open") }
            if index > 0 { _ = try client.receiveToEnd() }
            Glibc.shutdown(client.fd, Int32(SHUT_WR))  // (ends the refused connection's linger early)
            let deadline = Date().addingTimeInterval(10)
            while watcher.isAlive(index), Date() < deadline { usleep(1_000) }  // polled, bounded
            XCTAssertFalse(watcher.isAlive(index), "request \(index): the connection's state outlived its socket")
        }
    }
}

/// Passes accepts to the server and keeps a weak reference to each connection's delegate.
private final class ConnectionWatcher: GCDAsyncSocketDelegate, @unchecked Sendable {
    private struct Weak { weak var value: AnyObject? }
    private let server: HTTPHelloServer
    private let lock = NSLock()
    private var connections: [Weak] = []

    init(_ server: HTTPHelloServer) { self.server = server }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        server.socket(sock, didAcceptNewSocket: newSocket)
        let delegate = newSocket.delegate
        lock.withLock { connections.append(Weak(value: delegate)) }
    }

    func connection(_ index: Int) -> AnyObject? {
        lock.withLock { index < connections.count ? connections[index].value : nil }
    }

    func isAlive(_ index: Int) -> Bool {
        lock.withLock { index < connections.count && connections[index].value != nil }
    }
}

/// A count handed from the loop to the test thread (written before a semaphore is signalled, read after).
private final class HeldBytes: @unchecked Sendable {
    var count = 0
}
