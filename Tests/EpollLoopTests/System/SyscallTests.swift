import CEpollShim
import Glibc
import XCTest

@testable import EpollLoop

/// The syscall seam against the real kernel: results, `EAGAIN` as a value, errors naming the call.
final class SyscallTests: XCTestCase {
    private var toClose: [Int32] = []

    override func tearDown() {
        toClose.forEach { close($0) }
        toClose = []
    }

    private func pipe() throws -> (read: Int32, write: Int32) {
        let p = try makePipe()
        toClose += [p.read, p.write]
        return p
    }

    func testPipeIsNonblockingAndCloseOnExec() throws {
        let p = try pipe()
        XCTAssertNotEqual(p.read, p.write)
        for fd in [p.read, p.write] {
            XCTAssertNotEqual(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "fd \(fd) is blocking")
            XCTAssertNotEqual(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0, "fd \(fd) is inherited across exec")
        }
    }

    func testReadAndWrite() throws {
        let p = try pipe()
        var buffer = [UInt8](repeating: 0, count: 8)
        XCTAssertEqual(try buffer.withUnsafeMutableBytes { try Syscall.read(p.read, $0) }, .wouldBlock)
        let payload: [UInt8] = [1, 2, 3]
        XCTAssertEqual(try payload.withUnsafeBytes { try Syscall.write(p.write, $0) }, .processed(3))
        XCTAssertEqual(try buffer.withUnsafeMutableBytes { try Syscall.read(p.read, $0) }, .processed(3))
        XCTAssertEqual(Array(buffer[0..<3]), payload)
        XCTAssertEqual(try buffer.withUnsafeMutableBytes { try Syscall.read(p.read, $0) }, .wouldBlock)
    }

    func testEndOfFileIsZeroBytes() throws {
        let (r, w) = try makePipe()
        toClose.append(r)
        try Syscall.close(w)
        XCTAssertTrue(isClosed(w))
        var buffer = [UInt8](repeating: 0, count: 8)
        XCTAssertEqual(try buffer.withUnsafeMutableBytes { try Syscall.read(r, $0) }, .processed(0))
    }

    func testFullPipeWouldBlock() throws {
        let p = try pipe()
        let chunk = [UInt8](repeating: 0xAB, count: 4096)
        var written = 0
        var result: IOResult<Int> = .processed(0)
        for _ in 0..<1_000 {
            result = try chunk.withUnsafeBytes { try Syscall.write(p.write, $0) }
            guard case .processed(let n) = result else { break }
            written += n
        }
        XCTAssertEqual(result, .wouldBlock, "a pipe takes at most its buffer")
        XCTAssertGreaterThan(written, 0)
    }

    func testVectoredReadAndWrite() throws {
        let p = try pipe()
        let first: [UInt8] = [1, 2]
        let second: [UInt8] = [3, 4, 5]
        let written = try first.withUnsafeBytes { a in
            try second.withUnsafeBytes { b in
                var iov = [iovec(iov_base: UnsafeMutableRawPointer(mutating: a.baseAddress), iov_len: a.count),
                           iovec(iov_base: UnsafeMutableRawPointer(mutating: b.baseAddress), iov_len: b.count)]
                return try Syscall.writev(p.write, &iov, count: 2)
            }
        }
        XCTAssertEqual(written, .processed(5))
        var x = [UInt8](repeating: 0, count: 4)
        var y = [UInt8](repeating: 0, count: 4)
        let read = try x.withUnsafeMutableBytes { a in
            try y.withUnsafeMutableBytes { b in
                var iov = [iovec(iov_base: a.baseAddress, iov_len: a.count), iovec(iov_base: b.baseAddress, iov_len: b.count)]
                return try Syscall.readv(p.read, &iov, count: 2)
            }
        }
        XCTAssertEqual(read, .processed(5))
        XCTAssertEqual(x, [1, 2, 3, 4])
        XCTAssertEqual(y[0], 5)
    }

    func testErrorsNameTheCallAndErrno() throws {
        var buffer = [UInt8](repeating: 0, count: 4)
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try Syscall.read(-1, $0) }) {
            XCTAssertEqual($0 as? SyscallError, SyscallError(.read, errno: .badFileDescriptor))
        }
        XCTAssertThrowsError(try Syscall.close(-1)) {
            XCTAssertEqual($0 as? SyscallError, SyscallError(.close, errno: .badFileDescriptor))
        }
        let error = SyscallError(.epollCtl, errno: .fileExists)
        XCTAssertEqual(error.description, "epoll_ctl failed: File exists (errno \(EEXIST))")
        XCTAssertEqual(SystemCall.accept.rawValue, "accept4")
        XCTAssertEqual(SystemCall.pipe.rawValue, "pipe2")
        XCTAssertEqual(Errno.wouldBlock.rawValue, EWOULDBLOCK)
    }

    func testEpoll() throws {
        let epfd = try Syscall.epollCreate()
        toClose.append(epfd)
        XCTAssertNotEqual(fcntl(epfd, F_GETFD) & FD_CLOEXEC, 0)
        let p = try pipe()
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: 4)
        defer { events.deallocate() }
        try Syscall.epollCtl(epfd, CEPOLL_CTL_ADD, p.read, events: CEPOLL_IN, data: 0xFEED_0000_0000_0007)
        XCTAssertThrowsError(try Syscall.epollCtl(epfd, CEPOLL_CTL_ADD, p.read, events: CEPOLL_IN, data: 0)) {
            XCTAssertEqual($0 as? SyscallError, SyscallError(.epollCtl, errno: .fileExists))
        }
        XCTAssertThrowsError(try Syscall.epollCtl(epfd, CEPOLL_CTL_DEL, p.write, events: 0, data: 0)) {
            XCTAssertEqual($0 as? SyscallError, SyscallError(.epollCtl, errno: .noSuchFileOrDirectory))
        }
        XCTAssertEqual(try Syscall.epollWait(epfd, events, count: 4, timeoutMilliseconds: 0), 0)
        writeBytes(p.write)
        XCTAssertEqual(try Syscall.epollWait(epfd, events, count: 4, timeoutMilliseconds: 10_000), 1)
        XCTAssertEqual(cepoll_event_data(events, 0), 0xFEED_0000_0000_0007, "user data round-trips all 64 bits")
        XCTAssertEqual(cepoll_event_bits(events, 0) & CEPOLL_IN, CEPOLL_IN)
        try Syscall.epollCtl(epfd, CEPOLL_CTL_MOD, p.read, events: 0, data: 1)
        XCTAssertEqual(try Syscall.epollWait(epfd, events, count: 4, timeoutMilliseconds: 0), 0)
        try Syscall.epollCtl(epfd, CEPOLL_CTL_DEL, p.read, events: 0, data: 0)
        XCTAssertEqual(cepoll_event_size(), MemoryLayout<epoll_event>.size)
    }

    func testEventfdSignalAndDrain() throws {
        let efd = try Syscall.eventfd()
        toClose.append(efd)
        XCTAssertNotEqual(fcntl(efd, F_GETFL) & O_NONBLOCK, 0)
        let epfd = try Syscall.epollCreate()
        toClose.append(epfd)
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: 1)
        defer { events.deallocate() }
        try Syscall.epollCtl(epfd, CEPOLL_CTL_ADD, efd, events: CEPOLL_IN, data: 1)
        try Syscall.eventfdDrain(efd)  // already zero: EAGAIN is fine
        XCTAssertEqual(try Syscall.epollWait(epfd, events, count: 1, timeoutMilliseconds: 0), 0)
        try Syscall.eventfdSignal(efd)
        try Syscall.eventfdSignal(efd)
        XCTAssertEqual(try Syscall.epollWait(epfd, events, count: 1, timeoutMilliseconds: 0), 1)
        try Syscall.eventfdDrain(efd)  // one read resets the counter, however many signals
        XCTAssertEqual(try Syscall.epollWait(epfd, events, count: 1, timeoutMilliseconds: 0), 0)
    }
}
