import EpollLoop
import FoundationEssentials
import Glibc
import XCTest
@testable import LoadTest

/// The echo engine: the reply reader and send buffer on their own, then whole runs against raw servers that
/// split, coalesce, corrupt, close and reset (loopback, port 0; every wait inside the runner is bounded).
final class EchoConnectionTests: XCTestCase {
    // MARK: Reply reader

    /// The byte stream a connection with `phase` expects back for messages `0 ..< count`.
    private func replies(count: Int, size: Int, phase: UInt32) -> [UInt8] {
        var stream = [UInt8](repeating: 0, count: count * size)
        stream.withUnsafeMutableBytes { raw in
            for s in 0..<count {
                let message = UnsafeMutableRawBufferPointer(rebasing: raw[(s * size)..<((s + 1) * size)])
                Pattern.shared.fillMessage(message, sequence: UInt64(s), phase: phase)
            }
        }
        return stream
    }

    private func feed(_ reader: inout EchoReplyReader, _ bytes: ArraySlice<UInt8>) -> Bool {
        Array(bytes).withUnsafeBytes { reader.read($0) }
    }

    func testRepliesSplitAtEveryByteAreCounted() {
        for size in [1, 5, 8, 9, 64] {
            let stream = replies(count: 3, size: size, phase: 77)
            // Two pieces, cut at every position.
            for cut in 0...stream.count {
                var reader = EchoReplyReader(size: size, phase: 77)
                XCTAssertTrue(feed(&reader, stream[..<cut]), "size \(size), cut \(cut)")
                XCTAssertEqual(reader.sequence, UInt64(cut / size), "size \(size), cut \(cut)")
                XCTAssertTrue(feed(&reader, stream[cut...]), "size \(size), cut \(cut)")
                XCTAssertEqual(reader.sequence, 3, "size \(size), cut \(cut)")
                XCTAssertEqual(reader.offset, 0)
            }
            // One byte at a time.
            var reader = EchoReplyReader(size: size, phase: 77)
            for i in stream.indices {
                XCTAssertTrue(feed(&reader, stream[i...i]), "size \(size), byte \(i)")
                XCTAssertEqual(reader.sequence, UInt64((i + 1) / size))
            }
        }
    }

    func testCoalescedRepliesAreCounted() {
        let stream = replies(count: 100, size: 64, phase: 3)
        var reader = EchoReplyReader(size: 64, phase: 3)
        XCTAssertTrue(feed(&reader, stream[...]))
        XCTAssertEqual(reader.sequence, 100)
        // Coalesced and split: 1.5 replies per read.
        var halves = EchoReplyReader(size: 64, phase: 3)
        var start = 0
        while start < stream.count {
            let end = min(start + 96, stream.count)
            XCTAssertTrue(feed(&halves, stream[start..<end]))
            start = end
        }
        XCTAssertEqual(halves.sequence, 100)
    }

    func testAnyCorruptedByteIsAMismatch() {
        for size in [1, 8, 9, 64] {
            let good = replies(count: 3, size: size, phase: 5)
            for i in good.indices {
                var bad = good
                bad[i] ^= 0x01
                var reader = EchoReplyReader(size: size, phase: 5)
                // Split just before the bad byte as well, so the check of a part is exercised.
                XCTAssertTrue(feed(&reader, bad[..<i]))
                XCTAssertFalse(feed(&reader, bad[i...]), "size \(size), byte \(i)")
                XCTAssertEqual(reader.sequence, UInt64(i / size), "replies before the bad one stay counted")
            }
        }
        // A reply from another connection (phase) or out of order (sequence) does not match either.
        let other = replies(count: 1, size: 64, phase: 6)
        var reader = EchoReplyReader(size: 64, phase: 5)
        XCTAssertFalse(feed(&reader, other[...]))
        let second = Array(replies(count: 2, size: 64, phase: 5)[64...])
        var skipped = EchoReplyReader(size: 64, phase: 5)
        XCTAssertFalse(feed(&skipped, second[...]))
    }

    // MARK: Send buffer

    func testSendBufferKeepsUnsentBytesAcrossPartialSends() {
        var buffer = EchoSendBuffer(capacity: 12)
        defer { buffer.deallocate() }
        XCTAssertTrue(buffer.isEmpty)
        buffer.append(4) { $0.copyBytes(from: [1, 2, 3, 4]) }
        buffer.append(4) { $0.copyBytes(from: [5, 6, 7, 8]) }
        buffer.consume(3)  // a partial send
        XCTAssertEqual(Array(buffer.unsent), [4, 5, 6, 7, 8])
        XCTAssertTrue(buffer.hasRoom(for: 4))
        XCTAssertFalse(buffer.hasRoom(for: 8))
        buffer.append(4) { $0.copyBytes(from: [9, 10, 11, 12]) }
        buffer.append(3) { $0.copyBytes(from: [13, 14, 15]) }  // past the end: unsent bytes move to the front
        XCTAssertEqual(Array(buffer.unsent), [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15])
        buffer.consume(12)
        XCTAssertTrue(buffer.isEmpty)
        XCTAssertTrue(buffer.hasRoom(for: 12))
    }

    // MARK: Addresses and errors

    func testAddressesResolveOnceToIPv4OrIPv6() throws {
        XCTAssertEqual(try ServerAddress.resolve(host: "127.0.0.1", port: 9).family, AF_INET)
        XCTAssertEqual(try ServerAddress.resolve(host: "::1", port: 9).family, AF_INET6)
        XCTAssertEqual(try ServerAddress.resolve(host: "localhost", port: 9).family, AF_INET, "IPv4 is preferred")
        // Raw addresses of other families (here AF_UNIX) are not servers to connect to.
        var unix = Data(count: 16)
        unix[0] = UInt8(AF_UNIX)
        XCTAssertNil(ServerAddress(raw: unix))
    }

    func testSyscallErrorsAreClassified() {
        XCTAssertEqual(ErrorKind.classify(SyscallError(.connect, errno: .connectionRefused)), .refused)
        XCTAssertEqual(ErrorKind.classify(SyscallError(.connect, errno: .addressNotAvailable)), .addressNotAvailable)
        XCTAssertEqual(ErrorKind.classify(SyscallError(.recv, errno: .connectionReset)), .reset)
        XCTAssertEqual(ErrorKind.classify(SyscallError(.send, errno: .brokenPipe)), .reset)
        XCTAssertEqual(ErrorKind.classify(SyscallError(.socket, errno: .tooManyOpenFiles)), .tooManyFiles)
        XCTAssertEqual(ErrorKind.classify(SyscallError(.connect, errno: .timedOut)), .timeout)
        XCTAssertEqual(ErrorKind.classify(EventLoopError.system(SyscallError(.epollCtl, errno: .noMemory))), .other)
        XCTAssertEqual(ErrorKind.classify(EventLoopError.system(SyscallError(.socket, errno: .tooManyOpenFilesInSystem))),
                       .tooManyFiles)
    }

    // MARK: Runs against raw servers

    private func run(port: UInt16, host: String = "127.0.0.1", _ adjust: (inout LoadConfig) -> Void = { _ in }) throws -> RunResult {
        try shortRun(.echo, host: host, port: port, connections: 4, duration: 0.4, adjust)
    }

    /// Runs `body` with a raw server and checks that the run and the server together left no descriptor open.
    private func withServer(_ behavior: RawTestServer.Behavior, host: String = "127.0.0.1",
                            _ body: (RawTestServer) throws -> Void) throws {
        let before = openDescriptorsExceptEventfds()
        let server = try RawTestServer(behavior, host: host)
        defer {
            server.stop()
            XCTAssertEqual(openDescriptorsExceptEventfds(), before, "descriptors left open (or closed) by the run")
        }
        try body(server)
    }

    func testRepliesSentOneByteAtATime() throws {
        try withServer(.echo(chunk: 1)) { server in
            let result = try run(port: server.port) {
                $0.size = 13
                $0.pipeline = 3
            }
            XCTAssertGreaterThan(result.requests, 0)
            XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
            XCTAssertEqual(result.connectionsOpen, 4)
            XCTAssertEqual(result.bytes, result.requests * 13)
        }
    }

    func testCoalescedReplies() throws {
        // The server answers only once a connection's whole pipeline has arrived, in one send.
        try withServer(.batch(bytes: 4 * 64)) { server in
            let result = try run(port: server.port) { $0.pipeline = 4 }
            XCTAssertGreaterThan(result.requests, 0)
            XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
            XCTAssertEqual(result.latencyUs.count, result.requests)
        }
    }

    func testOpenLoopOverSplitReplies() throws {
        try withServer(.echo(chunk: 7)) { server in
            let result = try run(port: server.port) { $0.rate = 2000 }
            XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
            XCTAssertGreaterThan(result.requests, 400)
            XCTAssertLessThan(result.requests, 1200)
        }
    }

    /// Over ::1, as the socket tests do elsewhere: loopback IPv6 is part of the test environment.
    func testIPv6() throws {
        let server = try RawTestServer(.echo(chunk: 65_536), host: "::1")
        defer { server.stop() }
        let result = try run(port: server.port, host: "::1")
        XCTAssertGreaterThan(result.requests, 0)
        XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
        XCTAssertEqual(result.target, "::1:\(server.port)")
    }

    func testCorruptedReplyIsAMismatch() throws {
        try withServer(.corruptAt(offset: 64 * 20 + 3)) { server in
            let result = try run(port: server.port)
            XCTAssertEqual(result.errors.byKind["mismatch"], 4, "one per connection: \(result.errors)")
            XCTAssertEqual(result.errors.total, 4)
            XCTAssertEqual(result.connectionsOpen, 0, "a connection that delivered a corrupt echo is closed")
            XCTAssertEqual(result.connectionsEstablished, 4)
        }
    }

    func testServerClosingMidRunIsAnError() throws {
        try withServer(.closeAfter(bytes: 64 * 10, reset: false)) { server in
            let result = try run(port: server.port)
            XCTAssertEqual(result.errors.byKind["closed"], 4, "\(result.errors)")
            XCTAssertEqual(result.errors.total, 4)
            XCTAssertEqual(result.connectionsOpen, 0)
            XCTAssertEqual(result.connectionsEstablished, 4)
        }
    }

    func testServerResettingMidRunIsAnError() throws {
        try withServer(.closeAfter(bytes: 64 * 10, reset: true)) { server in
            let result = try run(port: server.port)
            XCTAssertEqual(result.errors.byKind["reset"], 4, "\(result.errors)")
            XCTAssertEqual(result.errors.total, 4)
            XCTAssertEqual(result.connectionsOpen, 0)
        }
    }

    func testRefusedConnectionsAreClassified() throws {
        // Bind a port and close it again: nothing listens there.
        let before = openDescriptorsExceptEventfds()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(bound, 0)
        let port = RawTestServer.localPort(of: fd)
        close(fd)
        // Not one connection: the run stops after the connect phase with the counts by kind.
        XCTAssertThrowsError(try run(port: port) {
            $0.connections = 6
            $0.maxConnecting = 2
        }) { error in
            XCTAssertTrue("\(error)".contains("(refused 6)"), "\(error)")
        }
        XCTAssertEqual(openDescriptorsExceptEventfds(), before, "descriptors left open by refused connects")
    }
}
