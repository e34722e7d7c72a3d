import Foundation
import Glibc
import SharedTestSupport
import XCTest

/// The example servers (echo-server, async-echo-server, http-hello) and the README's first program as a new
/// user meets them: started from the build with no options, they listen on the loopback only, say when they
/// shed connections, and leave with status 0 when told to stop. (Here beside `ChildProcess`, which runs the
/// package's executables for the load generator's tests too.)
final class ExampleServerTests: XCTestCase {
    private static let servers = ["echo-server", "async-echo-server", "http-hello"]

    /// Starts `name` with `arguments` (under `prlimit` when `limit` is given) and returns it with its port.
    private func start(_ name: String, _ arguments: [String] = [], nofile limit: Int? = nil) throws -> (ChildProcess, UInt16) {
        let program = ChildProcess.product(name)
        let server = try limit.map { try ChildProcess(TestTool.path("prlimit"), ["--nofile=\($0)", program, "--port", "0"] + arguments) }
            ?? ChildProcess(program, ["--port", "0"] + arguments)
        guard server.waitForOutput(containing: "listening", seconds: 20),
              let port = Self.port(in: server.standardOutput) else {
            server.wait(seconds: 5)
            throw StartFailure("\(name) did not start: \(server.standardOutput) \(server.standardError)")
        }
        return (server, port)
    }

    /// The port in "… listening on HOST port N …".
    private static func port(in line: String) -> UInt16? {
        guard let range = line.range(of: " port ") else { return nil }
        return UInt16(line[range.upperBound...].prefix { $0.isNumber })
    }

    /// Connects to `address:port` (IPv4, loopback only; blocking, at most 5 s: `SO_SNDTIMEO` bounds `connect`
    /// on Linux); the descriptor, or the negated errno.
    private static func connectTo(_ address: String, _ port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -errno }
        var limit = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        inet_pton(AF_INET, address, &sin.sin_addr)
        let result = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let failure = errno
            close(fd)
            return -failure
        }
        return fd
    }

    /// Connects and closes at once; 0 on success, else the errno.
    private static func connectErrno(_ address: String, _ port: UInt16) -> Int32 {
        let fd = connectTo(address, port)
        guard fd >= 0 else { return -fd }
        close(fd)
        return 0
    }

    /// SIGTERM, then the exit: status 0, not a signal (nor a sanitizer's exit-time verdict when built with one).
    private func stop(_ server: ChildProcess, _ name: String, file: StaticString = #filePath, line: UInt = #line) {
        server.process.terminate()
        let began = Date()
        let status = server.wait(seconds: 20)
        XCTAssertLessThan(Date().timeIntervalSince(began), 20, "\(name) did not stop on SIGTERM", file: file, line: line)
        XCTAssertEqual(server.process.terminationReason, .exit, "\(name) died of signal \(status)", file: file, line: line)
        XCTAssertEqual(status, 0, "\(name) exit status; stderr: \(server.standardError)", file: file, line: line)
    }

    /// The sanitizers that can instrument this test process: the runtime's initialiser (found with `dlsym`
    /// when linked in), the tool's name, and the variable its runtime reads options from.
    private static let sanitizers = [
        (initialiser: "__asan_init", name: "AddressSanitizer", options: "ASAN_OPTIONS"),
        (initialiser: "__tsan_init", name: "ThreadSanitizer", options: "TSAN_OPTIONS"),
    ]

    /// Each example server runs the sanitizer this test process runs under, and no other, and exits 0 under
    /// it on SIGTERM. Under a sanitizer (`swift test --sanitize=address` or `=thread`; `.ci/run` runs this
    /// suite under AddressSanitizer) a report, at any point or at exit, would make that status 1
    /// (AddressSanitizer) or 66 (ThreadSanitizer). Which runtime a server runs is shown by the runtime itself:
    /// told `help=1` (added to the options this process was given, which the servers inherit), it lists its
    /// flags under its name on stderr; a server with no sanitizer prints no such list.
    func testExampleServersRunUnderTheTestsSanitizerAndExitZero() throws {
        let active = Self.sanitizers.filter { dlsym(UnsafeMutableRawPointer(bitPattern: 0), $0.initialiser) != nil }
        let environment = Self.sanitizers.map { sanitizer in
            let given = getenv(sanitizer.options).map { String(cString: $0) } ?? ""
            return "\(sanitizer.options)=\(given.isEmpty ? "" : given + ":")help=1"
        }
        for name in Self.servers + ["udp-echo-server"] {
            let server = try ChildProcess(TestTool.path("env"), environment + [ChildProcess.product(name), "--port", "0", "--loops", "1"])
            guard server.waitForOutput(containing: name == "udp-echo-server" ? "bound to" : "listening", seconds: 20) else {
                server.wait(seconds: 5)
                XCTFail("\(name) did not start: \(server.standardOutput) \(server.standardError)")
                continue
            }
            stop(server, name)  // waits for the exit, then for stderr to drain
            for sanitizer in Self.sanitizers {
                let runs = server.standardError.contains("Available flags for \(sanitizer.name)")
                let expected = active.contains { $0.name == sanitizer.name }
                XCTAssertEqual(runs, expected, "\(name) \(runs ? "runs" : "does not run") under \(sanitizer.name); these tests \(expected ? "do" : "do not")")
            }
        }
    }

    /// With no `--host`, each example answers on 127.0.0.1 and refuses 127.0.0.2 (another loopback address,
    /// which a server listening on every interface would accept on).
    func testExampleServersListenOnTheLoopbackAddressUnlessToldOtherwise() throws {
        for name in Self.servers {
            let (server, port) = try start(name, ["--loops", "1"])
            XCTAssertTrue(server.standardOutput.contains("listening on 127.0.0.1 port"), "\(name): \(server.standardOutput)")
            XCTAssertEqual(Self.connectErrno("127.0.0.1", port), 0, name)
            XCTAssertEqual(Self.connectErrno("127.0.0.2", port), ECONNREFUSED, "\(name) listens beyond 127.0.0.1")
            stop(server, name)
        }
    }

    /// `--host '*'` still listens on every interface (here: both loopback addresses answer).
    func testHostStarListensOnEveryInterface() throws {
        let (server, port) = try start("echo-server", ["--loops", "1", "--host", "*"])
        XCTAssertEqual(Self.connectErrno("127.0.0.1", port), 0)
        XCTAssertEqual(Self.connectErrno("127.0.0.2", port), 0)
        stop(server, "echo-server")
    }

    /// At its descriptor limit (`prlimit --nofile=40`) each example sheds connections and the library says so
    /// on stderr (LoopDiagnostics' default), a line a second at most however many it sheds, and the server
    /// still stops cleanly afterwards.
    func testExampleServersReportAcceptFailuresAtTheDescriptorLimitRateLimited() throws {
        for name in Self.servers {
            let (server, port) = try start(name, ["--loops", "1"], nofile: 40)
            let began = DispatchTime.now()
            var clients: [Int32] = []
            defer { clients.forEach { close($0) } }
            for _ in 0..<60 {
                let fd = Self.connectTo("127.0.0.1", port)
                if fd >= 0 { clients.append(fd) }
            }
            let deadline = Date().addingTimeInterval(10)
            while !server.standardError.contains("accept on loop '"), Date() < deadline {
                usleep(10_000)  // polling the child's stderr, bounded by the deadline
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - began.uptimeNanoseconds) / 1e9
            let lines = server.standardError.split(separator: "\n").filter { $0.hasPrefix("accept on loop '") }
            XCTAssertFalse(lines.isEmpty, "\(name) shed connections silently: \(server.standardError)")
            XCTAssertTrue(lines.allSatisfy { $0.contains("accept4 failed: Too many open files") }, "\(lines)")
            XCTAssertLessThanOrEqual(Double(lines.count), seconds.rounded(.up) + 1, "\(name) is not rate-limited: \(lines)")
            clients.forEach { close($0) }
            clients = []
            stop(server, name)
        }
    }

    /// `udp-echo-server` as its usage line promises: with no `--host` it binds 127.0.0.1, echoes each datagram
    /// (empty, small, and the largest IPv4 allows) to its sender whole and in order, and leaves with status
    /// 0 on SIGTERM; with two loops (two sockets sharing the port) it still answers every datagram.
    func testUDPEchoServerEchoesEveryDatagramToItsSender() throws {
        for loops in ["1", "2"] {
            let program = ChildProcess.product("udp-echo-server")
            let server = try ChildProcess(program, ["--port", "0", "--loops", loops])
            guard server.waitForOutput(containing: "bound to", seconds: 20), let port = Self.port(in: server.standardOutput) else {
                server.wait(seconds: 5)
                return XCTFail("udp-echo-server did not start: \(server.standardOutput) \(server.standardError)")
            }
            XCTAssertTrue(server.standardOutput.contains("bound to 127.0.0.1 port"), server.standardOutput)
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            XCTAssertGreaterThanOrEqual(fd, 0)
            defer { close(fd) }
            var limit = timeval(tv_sec: 5, tv_usec: 0)  // every receive below is bounded
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            var size: Int32 = 1 << 20
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            var to = sockaddr_in()
            to.sin_family = sa_family_t(AF_INET)
            to.sin_port = port.bigEndian
            inet_pton(AF_INET, "127.0.0.1", &to.sin_addr)
            let payloads = [[UInt8]()] + (0..<50).map { i in (0..<(i * 7 + 1)).map { UInt8(truncatingIfNeeded: $0 &+ i) } }
                + [(0..<65_507).map { UInt8(truncatingIfNeeded: $0 * 31) }]
            for payload in payloads {
                let sent = payload.withUnsafeBytes { bytes in
                    withUnsafePointer(to: &to) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                }
                XCTAssertEqual(sent, payload.count)
            }
            var buffer = [UInt8](repeating: 0, count: 70_000)
            for (index, payload) in payloads.enumerated() {
                let got = recv(fd, &buffer, buffer.count, 0)
                guard got >= 0 else { return XCTFail("echo \(index) of \(payloads.count) did not come back (errno \(errno)), \(loops) loop(s)") }
                XCTAssertEqual(Array(buffer[0..<got]), payload, "echo \(index)")
            }
            stop(server, "udp-echo-server")
        }
    }

    /// The README's first program serves until it is killed: its last statement never returns
    /// (`dispatchMain()`), so the process outlives `accept` (the loops run on their own threads), and it
    /// listens on the loopback address. (Built and run by hand: see the commit that added this test.)
    func testTheReadmeTasteKeepsItsProcessServing() throws {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        guard let taste = text.components(separatedBy: "## A taste").dropFirst().first,
              let code = taste.components(separatedBy: "```swift\n").dropFirst().first?.components(separatedBy: "```").first else {
            return XCTFail("README.md has no '## A taste' Swift block")
        }
        let statements = code.split(separator: "\n")
            .map { $0.components(separatedBy: "//")[0].trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        XCTAssertEqual(statements.last, "dispatchMain()", "the taste's process exits when its last statement returns")
        XCTAssertTrue(statements.contains("import Dispatch"))
        XCTAssertTrue(statements.contains { $0.contains("accept(onInterface: \"127.0.0.1\"") }, "the taste listens beyond the loopback")
    }

    /// `--metrics HOST:PORT`: each server serves its loops' Prometheus text at `GET /metrics` while it runs,
    /// with every loop's lag probe on, and still exits 0 on SIGTERM.
    func testExampleServersServeTheirLoopsMetrics() throws {
        for name in ["echo-server", "async-echo-server", "http-hello", "udp-echo-server"] {
            let server = try ChildProcess(ChildProcess.product(name),
                                          ["--port", "0", "--loops", "2", "--metrics", "127.0.0.1:0"])
            guard server.waitForOutput(containing: "/metrics", seconds: 20),
                  let port = Self.metricsPort(in: server.standardOutput) else {
                server.process.terminate()
                server.wait(seconds: 5)
                XCTFail("\(name) did not announce its metrics: \(server.standardOutput) \(server.standardError)")
                continue
            }
            let response = Self.get("/metrics", port: port)
            XCTAssertTrue(response.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(name): \(response.prefix(200))")
            for loop in 0..<2 {
                XCTAssertTrue(response.contains("epoll_loop_iterations_total{loop=\""), name)
                XCTAssertTrue(response.contains("-\(loop)\"}"), "\(name): loop \(loop)")
            }
            XCTAssertTrue(response.contains("# TYPE epoll_loop_lag_seconds histogram"), name)
            // The lag probe is the only timer of an idle example server: every loop fires timers (every
            // 10 ms). Scraped again until they show, for at most 10 s.
            let deadline = ContinuousClock.now + .seconds(10)
            var timers = Self.timersFired(in: response)
            while timers.count != 2 || timers.contains(0), ContinuousClock.now < deadline {
                timers = Self.timersFired(in: Self.get("/metrics", port: port))
            }
            XCTAssertEqual(timers.count, 2, "\(name): a timer count per loop")
            XCTAssertFalse(timers.contains(0), "\(name): the lag probe fired on every loop: \(timers)")
            XCTAssertTrue(Self.get("/", port: port).hasPrefix("HTTP/1.1 404"), name)
            stop(server, name)
        }
    }

    /// Each loop's `epoll_loop_timers_total` in a metrics page.
    private static func timersFired(in page: String) -> [UInt64] {
        page.split(separator: "\n").filter { $0.hasPrefix("epoll_loop_timers_total{") }
            .compactMap { $0.split(separator: " ").last.flatMap { UInt64($0) } }
    }

    /// The port in "metrics on http://HOST:PORT/metrics".
    private static func metricsPort(in output: String) -> UInt16? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("metrics on http://") }),
              let end = line.range(of: "/metrics", options: .backwards),
              let colon = line[..<end.lowerBound].lastIndex(of: ":") else { return nil }
        return UInt16(line[line.index(after: colon)..<end.lowerBound])
    }

    /// One `GET path` on 127.0.0.1:`port`, closed after the response (blocking, each call bounded by 5 s).
    private static func get(_ path: String, port: UInt16) -> String {
        let fd = connectTo("127.0.0.1", port)
        guard fd >= 0 else { return "connect failed: errno \(-fd)" }
        defer { close(fd) }
        var limit = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        // Read until the head and Content-Length bytes of body are in.
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
            let text = String(decoding: bytes, as: UTF8.self)
            if let headEnd = text.range(of: "\r\n\r\n"),
               let lengthLine = text[..<headEnd.lowerBound].split(separator: "\r\n").first(where: { $0.hasPrefix("Content-Length: ") }),
               let length = Int(lengthLine.dropFirst("Content-Length: ".count)),
               text.utf8.count - text.utf8.distance(from: text.startIndex, to: headEnd.upperBound) >= length {
                return text
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A server that did not start: the test fails with its output.
private struct StartFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
