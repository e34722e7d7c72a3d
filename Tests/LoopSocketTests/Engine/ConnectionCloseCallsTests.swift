import Foundation
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// The system calls a connection's end makes, beside the C reference server's (which closes without
/// deregistering): a descriptor only the library holds is closed without an `epoll_ctl(DEL)`.
final class ConnectionCloseCallsTests: SocketTestCase {
    private let faults = FaultInjection.Scope()

    override func tearDownWithError() throws {
        faults.end()
        LibraryFault.testHook = nil
        try super.tearDownWithError()
    }

    /// Closes `client` with a failure injected into `epoll_ctl` on its descriptor; returns the fault
    /// reports, which name the failed deregistration only if the close asked for one.
    private func faultReportsOfClosing(
        _ client: GCDAsyncSocket, _ delegate: RecordingDelegate, _ peer: RawSocket
    ) throws -> [String] {
        let reports = Locked<[String]>([])
        LibraryFault.testHook = { message in reports.withLock { $0.append(message) } }
        let fd = try onLoop(client.eventLoop) { client.fd }
        XCTAssertGreaterThanOrEqual(fd, 0)
        faults.inject(.noMemory, into: .epollCtl, count: 1, on: .descriptor(fd))
        client.disconnect()
        _ = delegate.waitForDisconnect(of: client)
        peer.close()
        return reports.withLock { $0 }
    }

    func testADescriptorOnlyTheLibraryHoldsClosesWithoutDeregistering() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        let reports = try faultReportsOfClosing(client, delegate, peer)
        XCTAssertEqual(reports, [], "the close called epoll_ctl")
    }

    func testAnAcceptedDescriptorClosesWithoutDeregistering() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeServer(serverDelegate)
        let (raw, child) = try rawClient(to: server, delegate: serverDelegate)
        let reports = try faultReportsOfClosing(child, serverDelegate, raw)
        XCTAssertEqual(reports, [], "the close called epoll_ctl")
    }

    /// Once `socketFD()` has handed the descriptor out, the caller may have `dup`ed it, and a close alone
    /// would leave the registration in the epoll set: the close deregisters it first.
    func testADescriptorHandedOutIsDeregisteredBeforeItCloses() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        let handedOut = try onLoop(client.eventLoop) { client.socketFD() }
        XCTAssertGreaterThanOrEqual(handedOut, 0)
        let reports = try faultReportsOfClosing(client, delegate, peer)
        XCTAssertEqual(reports.count, 1, "\(reports)")
        XCTAssertTrue(reports.first?.contains("closing a registered descriptor") == true, "\(reports)")
    }
}
