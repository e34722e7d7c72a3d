import Dispatch
import Foundation
import Glibc
import Synchronization
import XCTest

@testable import LoadTest

/// `loadtest udp`: its arguments, and short runs against a test echo server that echoes faithfully, drops,
/// corrupts, duplicates or swaps datagrams, each of which the run must count.
final class UDPModeTests: XCTestCase {
    // MARK: Arguments

    func testUDPModeParsesItsOptions() throws {
        guard case .run(let config) = try CommandLineParser.parse(
            ["udp", "--port", "9000", "--connections", "50", "--size", "1200", "--pipeline", "4", "--timeout", "250ms"])
        else { return XCTFail("not a run") }
        XCTAssertEqual(config.mode, .udp)
        XCTAssertEqual(config.connections, 50)
        XCTAssertEqual(config.size, 1200)
        XCTAssertEqual(config.pipeline, 4)
        XCTAssertEqual(config.timeout, 0.25, accuracy: 1e-9)
        guard case .run(let paced) = try CommandLineParser.parse(["udp", "--port", "9000", "--rate", "20k"]) else {
            return XCTFail("not a run")
        }
        XCTAssertEqual(paced.rate, 20_000)
    }

    func testUDPModeRejectsWhatItCannotDo() {
        let refused: [[String]] = [
            ["udp"],  // no port
            ["udp", "--port", "9000", "--size", "7"],  // no room for the sequence number
            ["udp", "--port", "9000", "--size", "65508"],  // larger than any UDP payload over IPv4
            ["udp", "--port", "9000", "--tls"],
            ["udp", "--url", "http://127.0.0.1:9000/"],
            ["udp", "--port", "9000", "--rate", "1000", "--pipeline", "2"],
        ]
        for arguments in refused {
            XCTAssertThrowsError(try CommandLineParser.parse(arguments), "\(arguments)")
        }
    }

    // MARK: Runs

    func testARunAgainstAFaithfulEchoCountsEveryDatagramAndNoLoss() throws {
        let server = try UDPTestEchoServer(policy: .echo)
        defer { server.stop() }
        let result = try shortRun(.udp, port: server.port, connections: 4, duration: 0.5) { $0.pipeline = 2 }
        XCTAssertEqual(result.mode, "udp")
        XCTAssertGreaterThan(result.requests, 100)
        let datagrams = try XCTUnwrap(result.datagrams)
        XCTAssertGreaterThanOrEqual(datagrams.sent, result.requests)
        XCTAssertEqual(datagrams.lost, 0)
        XCTAssertEqual(datagrams.corrupt, 0)
        XCTAssertEqual(datagrams.duplicates, 0)
        XCTAssertEqual(datagrams.reordered, 0)
        XCTAssertEqual(result.errors.total, 0)
        XCTAssertGreaterThan(result.latencyUs.count, 0)
        XCTAssertTrue(ReportText.report(result).contains("datagrams/s"))
    }

    /// Every 10th datagram is dropped: each is counted lost after the timeout and replaced, so the flows keep
    /// going (a closed loop that waited for the lost echo would stop at its first loss).
    func testDroppedDatagramsAreCountedLostAndTheFlowsKeepGoing() throws {
        let server = try UDPTestEchoServer(policy: .dropEvery(10))
        defer { server.stop() }
        let result = try shortRun(.udp, port: server.port, connections: 2, duration: 1) { $0.timeout = 0.05 }
        let datagrams = try XCTUnwrap(result.datagrams)
        XCTAssertGreaterThan(datagrams.lost, 0)
        XCTAssertGreaterThan(result.requests, datagrams.lost * 3, "the flows went on after their losses")
        XCTAssertEqual(datagrams.corrupt, 0)
    }

    func testCorruptedEchoesAreCounted() throws {
        let server = try UDPTestEchoServer(policy: .corruptEvery(5))
        defer { server.stop() }
        let result = try shortRun(.udp, port: server.port, connections: 1, duration: 0.5) { $0.timeout = 0.05 }
        let datagrams = try XCTUnwrap(result.datagrams)
        XCTAssertGreaterThan(datagrams.corrupt, 0)
        XCTAssertGreaterThan(result.errors.byKind["mismatch"] ?? 0, 0)
        XCTAssertGreaterThan(datagrams.lost, 0, "a corrupt echo does not complete its datagram")
    }

    func testDuplicatedEchoesAreCounted() throws {
        let server = try UDPTestEchoServer(policy: .duplicateEvery(4))
        defer { server.stop() }
        let result = try shortRun(.udp, port: server.port, connections: 1, duration: 0.5)
        let datagrams = try XCTUnwrap(result.datagrams)
        XCTAssertGreaterThan(datagrams.duplicates, 0)
        XCTAssertEqual(datagrams.lost, 0)
    }

    /// The server holds each even datagram and sends it after the next one: with two in flight per flow, every
    /// held echo arrives after a later one of its flow.
    func testSwappedEchoesAreCountedReordered() throws {
        let server = try UDPTestEchoServer(policy: .swapPairs)
        defer { server.stop() }
        let result = try shortRun(.udp, port: server.port, connections: 1, duration: 0.5) { $0.pipeline = 2 }
        let datagrams = try XCTUnwrap(result.datagrams)
        XCTAssertGreaterThan(datagrams.reordered, 0)
        XCTAssertEqual(datagrams.corrupt, 0)
    }

    /// Nothing listens on the port: the kernel's ICMP "port unreachable" comes back to each connected flow as
    /// `ECONNREFUSED`, which is counted; the run ends on time (no spin, no hang) and nothing is echoed.
    func testAClosedPortIsCountedRefusedAndTheRunEnds() throws {
        let closed = try UDPTestEchoServer(policy: .echo)
        let port = closed.port
        closed.stop()  // the port is closed now
        let result = try shortRun(.udp, port: port, connections: 2, duration: 0.3) { $0.timeout = 0.05 }
        XCTAssertEqual(result.requests, 0)
        XCTAssertGreaterThan(result.errors.byKind["refused"] ?? 0, 0)
        XCTAssertGreaterThan(result.datagrams?.lost ?? 0, 0, "unanswered datagrams are counted lost")
    }

    func testOpenLoopSendsAtTheRate() throws {
        let server = try UDPTestEchoServer(policy: .echo)
        defer { server.stop() }
        let result = try shortRun(.udp, port: server.port, connections: 4, duration: 1) { $0.rate = 2000 }
        XCTAssertEqual(result.requestsPerSecond, 2000, accuracy: 400)
        XCTAssertEqual(result.datagrams?.lost, 0)
        XCTAssertNotNil(result.serviceTimeUs)
    }
}

/// A UDP echo server on 127.0.0.1 (port 0) on its own thread, with a blocking socket whose 20 ms receive
/// timeout bounds every wait (so `stop` returns promptly), that does to the datagrams what `policy` says.
final class UDPTestEchoServer: @unchecked Sendable {
    enum Policy {
        case echo
        case dropEvery(Int)
        case corruptEvery(Int)
        case duplicateEvery(Int)
        case swapPairs
    }

    let port: UInt16
    private let fd: Int32
    private let policy: Policy
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(policy: Policy) throws {
        self.policy = policy
        let socketFD = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard socketFD >= 0 else { throw POSIXErrorWrapper(errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            close(socketFD)
            throw POSIXErrorWrapper(errno)
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 20_000)
        setsockopt(socketFD, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) }
        }
        fd = socketFD
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    func stop() {
        stopping.store(true, ordering: .releasing)
        _ = finished.wait(timeout: .now() + 5)
        close(fd)
    }

    private func serve() {
        defer { finished.signal() }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var held: ([UInt8], sockaddr_storage, socklen_t)?
        var index = 0
        while !stopping.load(ordering: .acquiring) {
            var peer = sockaddr_storage()
            var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let n = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, bytes.baseAddress, bytes.count, 0, $0, &peerLength) }
                }
            }
            guard n >= 0 else { continue }  // the receive timeout: look at `stopping` again
            var datagram = Array(buffer[0..<n])
            index += 1
            switch policy {
            case .echo:
                send(datagram, to: peer, peerLength)
            case .dropEvery(let k):
                if index % k != 0 { send(datagram, to: peer, peerLength) }
            case .corruptEvery(let k):
                if index % k == 0 { datagram[datagram.count - 1] ^= 0xFF }
                send(datagram, to: peer, peerLength)
            case .duplicateEvery(let k):
                send(datagram, to: peer, peerLength)
                if index % k == 0 { send(datagram, to: peer, peerLength) }
            case .swapPairs:
                if let (first, firstPeer, firstLength) = held {
                    send(datagram, to: peer, peerLength)
                    send(first, to: firstPeer, firstLength)
                    held = nil
                } else {
                    held = (datagram, peer, peerLength)
                }
            }
        }
    }

    private func send(_ datagram: [UInt8], to peer: sockaddr_storage, _ length: socklen_t) {
        var peer = peer
        _ = datagram.withUnsafeBytes { bytes in
            withUnsafePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, length) }
            }
        }
    }
}

/// An `errno` as an `Error`, for the test server's set-up.
struct POSIXErrorWrapper: Error {
    let code: Int32
    init(_ code: Int32) { self.code = code }
}
