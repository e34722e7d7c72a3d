import Glibc
import XCTest

@testable import LoadTest

/// What the transports add beneath the protocol, over both (`ws://`'s own on the loop, and GCDAsyncSocket, the
/// one `wss://` takes): connect failures and timeouts counted by kind, the handshake's deadline, a server
/// gone in the middle of a frame, and messages bigger than the kernel takes in one `send` (partial sends,
/// EPOLLOUT) with every byte checked. Descriptors are all closed afterwards.
final class WebSocketTransportTests: XCTestCase {
    private func run(port: UInt16, socket: Bool, path: String = "/", connections: Int = 1, duration: Double = 0.3,
                     _ adjust: (inout LoadConfig) -> Void = { _ in }) throws -> RunResult {
        try shortRun(.ws, port: port, connections: connections, duration: duration) { config in
            config.path = path
            config.hostHeader = "127.0.0.1:\(port)"
            config.ws.socketTransport = socket
            adjust(&config)
        }
    }

    private func name(_ socket: Bool) -> String { socket ? "over GCDAsyncSocket" : "over the loop transport" }

    /// A listening socket on 127.0.0.1 (a free port) with `backlog`, never accepting; closed by the caller.
    private func listener(backlog: Int32) throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RawServerError(call: "socket", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            close(fd)
            throw RawServerError(call: "bind/listen", errno: errno)
        }
        return (fd, RawTestServer.localPort(of: fd))
    }

    /// A blocking connect to `port` on 127.0.0.1 (the kernel completes it into the accept queue).
    private func connectFiller(_ port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw RawServerError(call: "connect", errno: errno)
        }
        return fd
    }

    /// The connections the listener has completed and not accepted (`tcpi_unacked` on a listener).
    private func acceptQueueLength(_ fd: Int32) -> Int {
        var info = tcp_info()
        var length = socklen_t(MemoryLayout<tcp_info>.size)
        guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return -1 }
        return Int(info.tcpi_unacked)
    }

    func testRefusedConnectsAreCounted() throws {
        // Bound and closed again: nothing listens there.
        let (fd, port) = try listener(backlog: 1)
        close(fd)
        for socket in [false, true] {
            let before = openDescriptorsExceptEventfds()
            // Not one connection: the run stops after the connect phase with the counts by kind.
            XCTAssertThrowsError(try run(port: port, socket: socket, connections: 3)) { error in
                XCTAssertTrue("\(error)".contains("(refused 3)"), "\(name(socket)): \(error)")
            }
            XCTAssertEqual(openDescriptorsExceptEventfds(), before, "descriptors left open \(name(socket))")
        }
    }

    func testConnectTimeoutIsCounted() throws {
        // A listener with a full accept queue drops further SYNs: the connect never completes.
        let (fd, port) = try listener(backlog: 0)
        defer { close(fd) }
        let filler = try connectFiller(port)
        defer { close(filler) }
        let deadline = Date(timeIntervalSinceNow: 10)
        while acceptQueueLength(fd) < 1 && Date() < deadline { sched_yield() }
        XCTAssertGreaterThanOrEqual(acceptQueueLength(fd), 1, "the accept queue filled")
        for socket in [false, true] {
            let before = openDescriptorsExceptEventfds()
            XCTAssertThrowsError(try run(port: port, socket: socket) { $0.timeout = 0.2 }) { error in
                XCTAssertTrue("\(error)".contains("(connect_timeout 1)"), "\(name(socket)): \(error)")
            }
            XCTAssertEqual(openDescriptorsExceptEventfds(), before, "descriptors left open \(name(socket))")
        }
    }

    func testHandshakeWithoutAnAnswerTimesOut() throws {
        // The kernel completes the TCP connects into the accept queue; nobody ever answers the upgrade request.
        let (fd, port) = try listener(backlog: 16)
        defer { close(fd) }
        for socket in [false, true] {
            let before = openDescriptorsExceptEventfds()
            XCTAssertThrowsError(try run(port: port, socket: socket, connections: 2) { $0.timeout = 0.2 }) { error in
                XCTAssertTrue("\(error)".contains("(timeout 2)"), "\(name(socket)): \(error)")
            }
            XCTAssertEqual(openDescriptorsExceptEventfds(), before, "descriptors left open \(name(socket))")
        }
    }

    func testServerGoneInTheMiddleOfAFrame() throws {
        for socket in [false, true] {
            let peer = try WebSocketPeer("script")
            defer { peer.stop() }
            let before = openDescriptorsExceptEventfds()
            let result = try run(port: peer.port, socket: socket, path: "/midframe") { $0.ws.workload = .receive }
            XCTAssertEqual(openDescriptorsExceptEventfds(), before, "descriptors left open \(name(socket))")
            XCTAssertEqual(result.errors.byKind, ["closed": 1], "\(name(socket)): \(result.errors.first ?? "")")
            XCTAssertEqual(result.connectionsOpen, 0)
            XCTAssertTrue(peer.waitFor("midframe: closed after 40 of 100 payload bytes\n"), peer.child.standardOutput)
        }
    }

    /// Messages of almost 1 MiB, 16 in flight, to a server that reads nothing for half a second: the first
    /// write (16 MB) is more than the kernel's buffers hold, so the rest waits for EPOLLOUT, and the echoes
    /// are read meanwhile (a server that stops reading while its replies wait must not deadlock with the
    /// client). Every byte of every echo is checked.
    func testMessagesBiggerThanTheKernelTakesAtOnce() throws {
        for socket in [false, true] {
            let peer = try WebSocketPeer("script")
            defer { peer.stop() }
            let size = 1_000_000
            let result = try run(port: peer.port, socket: socket, path: "/slowread", duration: 1.5) { config in
                config.size = size
                config.pipeline = 16
                config.warmup = 0
            }
            XCTAssertEqual(result.errors.total, 0, "\(name(socket)): \(result.errors.first ?? "")")
            // Completed messages, not a rate: how many a slow-reading Python peer echoes in the window depends
            // on the machine's load; one whole message each way is what a stuck transport would never deliver.
            XCTAssertGreaterThanOrEqual(result.requests, 1, name(socket))
            XCTAssertEqual(result.bytes, result.requests * UInt64(size), name(socket))
        }
    }

    /// A server that sends pings and never reads the pongs: the loop transport stops reading once the unsent
    /// pongs pass its bound, so the server's sends block (it says so) long before its 256 MiB, and the client's
    /// memory stays small. (GCDAsyncSocket queues every write, so this bound is the loop transport's own.)
    func testPingFloodFromAServerThatNeverReads() throws {
        let peer = try WebSocketPeer("script")
        defer { peer.stop() }
        try resetPeak()
        let base = try peakResidentKiB()
        let result = try run(port: peer.port, socket: false, path: "/pingflood", duration: 2) { config in
            config.ws.workload = .receive
        }
        let growth = try peakResidentKiB() - base
        XCTAssertEqual(result.errors.total, 0, result.errors.first ?? "")
        XCTAssertTrue(peer.waitFor("pingflood: "), peer.child.standardOutput)
        let line = try XCTUnwrap(peer.child.standardOutput.split(separator: "\n").first { $0.hasPrefix("pingflood: ") })
        XCTAssertTrue(line.hasPrefix("pingflood: blocked after "), "the server's sends blocked while the run went on: \(line)")
        XCTAssertLessThan(growth, 24 * 1024, "peak memory grew by \(growth) KiB")
    }
}
