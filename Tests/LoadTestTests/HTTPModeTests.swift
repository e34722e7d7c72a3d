import EpollLoop
import FoundationEssentials
import LoopSocket
import Synchronization
import XCTest
@testable import LoadTest

/// An HTTP/1.1 server that records every request (request line, headers, body) and answers `/missing` with
/// 404, everything else with 200.
final class RecordingHTTPServer: GCDAsyncSocketDelegate, @unchecked Sendable {
    struct Request: Sendable {
        var line: String
        var headers: [String]
        var body: [UInt8]
    }

    static let headEnd = Data("\r\n\r\n".utf8)
    let group: EventLoopGroup
    let listener: GCDAsyncSocket
    let requests = Mutex<[Request]>([])
    private var pending: [ObjectIdentifier: Request] = [:]  // the server's one loop only
    var port: UInt16 { listener.localPort }

    init() throws {
        group = try EventLoopGroup(numberOfLoops: 1, name: "recording")
        listener = GCDAsyncSocket(delegate: nil, delegateQueue: nil, loop: group.loops[0], group: group)
        listener.delegate = self
        try listener.accept(onInterface: "127.0.0.1", port: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        newSocket.readData(to: Self.headEnd, withTimeout: -1, tag: 1)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        if tag == 1 {
            let lines = String(decoding: data, as: UTF8.self).split(separator: "\r\n").map(String.init)
            let request = Request(line: lines.first ?? "", headers: Array(lines.dropFirst()), body: [])
            let length = request.headers.first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            if length > 0 {
                pending[ObjectIdentifier(sock)] = request
                sock.readData(toLength: UInt(length), withTimeout: -1, tag: 2)
                return
            }
            answer(sock, request)
        } else if var request = pending.removeValue(forKey: ObjectIdentifier(sock)) {
            request.body = Array(data)
            answer(sock, request)
        }
    }

    private func answer(_ sock: GCDAsyncSocket, _ request: Request) {
        requests.withLock { $0.append(request) }
        let missing = request.line.contains(" /missing ")
        sock.write(Data((missing ? "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!" : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").utf8),
                   withTimeout: -1, tag: 0)
        sock.readData(to: Self.headEnd, withTimeout: -1, tag: 1)
    }

    func stop() throws {
        listener.disconnect()
        try group.shutdownGracefully(timeout: .seconds(10))
    }
}

final class HTTPModeTests: XCTestCase {
    func testMethodHeadersBodyAndPathsInRotationAndNon2xxAsErrors() throws {
        let server = try RecordingHTTPServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let command = try CommandLineParser.parse([
            "http", "--url", "http://127.0.0.1:\(server.port)/a", "--url", "http://127.0.0.1:\(server.port)/missing",
            "-X", "POST", "-H", "X-Test: yes", "-H", "User-Agent: tester", "--body", "hello",
            "-c", "2", "-l", "1", "-d", "0.3", "--warmup", "0.1", "-q",
        ])
        guard case .run(let config) = command else { return XCTFail("\(command)") }
        let result = try LoadRunner(config: config, output: { _ in }).run()
        let requests = server.requests.withLock { $0 }
        XCTAssertGreaterThan(requests.count, 4)
        for request in requests {
            XCTAssertTrue(request.line == "POST /a HTTP/1.1" || request.line == "POST /missing HTTP/1.1", request.line)
            XCTAssertTrue(request.headers.contains("X-Test: yes"), "\(request.headers)")
            XCTAssertTrue(request.headers.contains("User-Agent: tester"), "the given User-Agent replaces loadtest's: \(request.headers)")
            XCTAssertEqual(request.headers.filter { $0.hasPrefix("User-Agent") }.count, 1)
            XCTAssertTrue(request.headers.contains("Content-Length: 5"), "\(request.headers)")
            XCTAssertEqual(request.body, Array("hello".utf8))
        }
        // Each connection alternates between the two paths.
        let a = requests.filter { $0.line.contains("/a ") }.count
        XCTAssertLessThanOrEqual(abs(a - (requests.count - a)), 2, "rotation: \(a) of \(requests.count)")
        // Every 404 is an error; the 200s are not.
        let notFound = result.errors.byKind["http_status"] ?? 0
        XCTAssertGreaterThan(notFound, 0)
        XCTAssertEqual(result.errors.total, notFound, "\(result.errors)")
        XCTAssertEqual(result.errors.first, "HTTP status 404")
        // Received bytes count heads and bodies.
        XCTAssertGreaterThan(result.bytes, result.requests * 3)
    }

    func testRequestBytes() {
        var config = LoadConfig(mode: .http)
        config.hostHeader = "h:1"
        config.http.paths = ["/x", "/y?q=1"]
        config.http.headers = ["Host: other", "Accept: text/plain"]
        config.http.method = "PUT"
        XCTAssertEqual(config.httpRequests.map { String(decoding: $0, as: UTF8.self) }, [
            "PUT /x HTTP/1.1\r\nUser-Agent: loadtest\r\nHost: other\r\nAccept: text/plain\r\nContent-Length: 0\r\n\r\n",
            "PUT /y?q=1 HTTP/1.1\r\nUser-Agent: loadtest\r\nHost: other\r\nAccept: text/plain\r\nContent-Length: 0\r\n\r\n",
        ])
        config.http = HTTPRequestSettings()
        config.path = "/"
        XCTAssertEqual(String(decoding: config.httpRequests[0], as: UTF8.self),
                       "GET / HTTP/1.1\r\nHost: h:1\r\nUser-Agent: loadtest\r\nAccept: */*\r\n\r\n")
    }
}
