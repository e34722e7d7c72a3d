import Foundation
import Glibc
import SharedTestSupport
import XCTest

/// The http-hello binary against clients that abuse a request head: endless empty lines before it, a head that
/// trickles in past its deadline, heads it refuses; what it costs the server and what its metrics page says.
final class HTTPHelloHostileClientTests: XCTestCase {
    /// Starts http-hello (one loop) with `arguments`; the process and its port.
    private func start(_ arguments: [String] = []) throws -> (ChildProcess, UInt16) {
        let server = try ChildProcess(ChildProcess.product("http-hello"), ["--port", "0", "--loops", "1"] + arguments)
        guard server.waitForOutput(containing: "listening", seconds: 20),
              let port = Self.number(after: " port ", in: server.standardOutput) else {
            server.wait(seconds: 5)
            throw POSIXError(.ESRCH, userInfo: [NSLocalizedDescriptionKey: "http-hello did not start: \(server.standardError)"])
        }
        return (server, port)
    }

    /// SIGTERM, then the exit (bounded).
    private static func stop(_ server: ChildProcess) {
        server.process.terminate()
        XCTAssertEqual(server.wait(seconds: 20), 0, server.standardError)
    }

    /// The port after `marker` in `text`.
    private static func number(after marker: String, in text: String) -> UInt16? {
        guard let range = text.range(of: marker) else { return nil }
        return UInt16(text[range.upperBound...].prefix { $0.isNumber })
    }

    /// A field of the process's /proc status, in KiB (`VmHWM`, `VmRSS`).
    private static func kibibytes(_ field: String, of process: ChildProcess) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(process.process.processIdentifier)/status", encoding: .utf8)
        let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix(field + ":") })
        return try XCTUnwrap(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }

    /// 16 MiB of empty lines before a request cost the server no memory (they are used up as they arrive, not
    /// kept and searched again on every read), and the request after them is answered.
    func testAFloodOfEmptyLinesHoldsNoMemory() throws {
        let (server, port) = try start()
        defer { Self.stop(server) }
        let client = try LoopbackClient(port: port)
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(try client.receive(upTo: "hello").hasSuffix("hello"))
        let before = try Self.kibibytes("VmHWM", of: server)
        let mebibyte = Data(String(repeating: "\r\n", count: 1 << 19).utf8)
        for _ in 0..<16 { try client.send(mebibyte) }
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(try client.receive(upTo: "hello").hasSuffix("hello"))
        let grown = try Self.kibibytes("VmHWM", of: server) - before
        XCTAssertLessThan(grown, 8 << 10, "KiB the server grew by while it took 16 MiB of empty lines")
    }

    /// `--head-timeout 1`: a head that trickles in a byte every 100 ms, well inside the idle timeout, gets 408
    /// about a second after its first byte, and the connection closes.
    func testATricklingHeadGets408AtTheHeadTimeout() throws {
        let (server, port) = try start(["--head-timeout", "1"])
        defer { Self.stop(server) }
        let client = try LoopbackClient(port: port)
        let began = Date()
        try client.send("GET / HTTP/1.1\r\nX-Slow: ")
        var pending = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
        while poll(&pending, 1, 100) == 0, Date().timeIntervalSince(began) < 15 {
            try client.send("a")
        }
        let response = try client.receive(upTo: "\r\n\r\n")
        let waited = Date().timeIntervalSince(began)
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"), response)
        XCTAssertGreaterThanOrEqual(waited, 1)
        XCTAssertLessThan(waited, 10)
    }

    /// Refused heads (a repeated Content-Length, too many fields for `--max-header-fields 3`) get their status,
    /// and the metrics page counts them by reason beside the loops' figures.
    func testRefusalsAreCountedOnTheMetricsPage() throws {
        let (server, port) = try start(["--max-header-fields", "3", "--metrics", "127.0.0.1:0"])
        defer { Self.stop(server) }
        guard server.waitForOutput(containing: "/metrics", seconds: 20),
              let metricsPort = Self.number(after: "http://127.0.0.1:", in: server.standardOutput) else {
            return XCTFail("no metrics address: \(server.standardOutput)")
        }
        let refusals = [
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na", "400"),
            ("GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", "431"),
        ]
        for (request, status) in refusals {
            let client = try LoopbackClient(port: port)
            try client.send(request)
            let response = try client.receive(upTo: "\r\n\r\n")
            XCTAssertTrue(response.hasPrefix("HTTP/1.1 \(status) "), response)
        }
        let scrape = try LoopbackClient(port: metricsPort)
        try scrape.send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let page = String(decoding: try scrape.receiveToEnd().data, as: UTF8.self)
        for line in ["http_hello_refused_total{reason=\"bad_request\",status=\"400\"} 1",
                     "http_hello_refused_total{reason=\"too_many_fields\",status=\"431\"} 1",
                     "http_hello_refused_total{reason=\"head_timeout\",status=\"408\"} 0"] {
            XCTAssertTrue(page.contains(line + "\n"), "\(line) in \(page)")
        }
        XCTAssertTrue(page.contains("epoll_loop_iterations_total"), "the loops' own figures are still there: \(page)")
    }
}
