import Foundation
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Failures on descriptors the library owns are reported, never swallowed, and a failed system call keeps
/// its errno and name all the way to the delegate.
final class LibraryFaultTests: SocketTestCase {
    private let faults = FaultInjection.Scope()

    override func tearDownWithError() throws {
        faults.end()
        LibraryFault.testHook = nil
        try super.tearDownWithError()
    }

    /// The loop refuses an interest change (`epoll_ctl` fails with ENOMEM): the connection ends with that
    /// errno and call, not with a formatted string.
    func testARefusedInterestChangeEndsTheConnectionWithItsErrno() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        let fd = try onLoop(client.eventLoop) { client.fd }
        faults.inject(.noMemory, into: .epollCtl, count: 1, on: .descriptor(fd))
        // Bytes with no read queued: the socket drops EPOLLIN from its interest, and that change fails.
        try peer.send("unread")
        let error = delegate.waitForDisconnect(of: client) as? GCDAsyncSocketError
        XCTAssertEqual(error?.code, .otherError)
        XCTAssertEqual(error?.errno, .noMemory)
        XCTAssertEqual(error?.syscall, .epollCtl)
    }

    /// A close the kernel refuses on a connection's own descriptor reaches the fault report (in debug builds
    /// an assertion; here the test's hook), with what was being done.
    func testAFailedCloseOfAnOwnedDescriptorIsReported() throws {
        let reports = Locked<[String]>([])
        LibraryFault.testHook = { message in reports.withLock { $0.append(message) } }
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)  // the peer stays open: only our close ends it
        let fd = try onLoop(client.eventLoop) { client.fd }
        XCTAssertGreaterThanOrEqual(fd, 0)
        faults.inject(.badFileDescriptor, into: .close, count: 1, on: .descriptor(fd))
        client.disconnect()
        _ = delegate.waitForDisconnect(of: client)
        let seen = reports.withLock { $0 }
        peer.close()
        XCTAssertEqual(seen.count, 1, "\(seen)")
        XCTAssertTrue(seen.first?.contains("closing a registered descriptor") == true, "\(seen)")
        XCTAssertTrue(seen.first?.contains("EBADF") == true || seen.first?.contains("Bad file descriptor") == true, "\(seen)")
    }
}
