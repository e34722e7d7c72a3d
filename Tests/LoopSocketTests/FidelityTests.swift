import Dispatch
import Foundation
import Glibc
import LoopSocket
import XCTest

/// GCDAsyncSocket behaviours ported code relies on, each written as a GCDAsyncSocket user writes it
/// (`import LoopSocket` only, errors looked at as `NSError`).
final class FidelityTests: SocketTestCase {
    /// GCDAsyncSocket refuses to connect a socket that has nowhere to report the outcome.
    func testConnectWithoutADelegateIsABadConfigError() throws {
        let listener = try RawListener(host: "127.0.0.1")
        let sock = GCDAsyncSocket()
        do {
            try sock.connect(toHost: "127.0.0.1", onPort: listener.port)
            XCTFail("connect without a delegate must throw")
        } catch {
            // (On Linux `catch let error as NSError` does not match a Swift error: bridge with `as`.)
            let error = error as NSError
            XCTAssertEqual(error.domain, GCDAsyncSocketErrorDomain)
            XCTAssertEqual(error.code, GCDAsyncSocketError.Code.badConfigError.rawValue)
            XCTAssertEqual(error.localizedDescription, "Attempting to connect without a delegate. Set a delegate first.")
        }
        XCTAssertTrue(sock.isDisconnected, "the refused connect left the socket idle")

        // With a delegate the same socket connects.
        let delegate = makeDelegate("late")
        sock.delegate = delegate
        try sock.connect(toHost: "127.0.0.1", onPort: listener.port, withTimeout: testTimeout)
        let peer = try listener.accept()
        delegate.waitForConnect()
        sock.disconnect()
        XCTAssertNil(delegate.waitForDisconnect())
        peer.close()
    }

    /// A refused connect reaches `socketDidDisconnect` as GCDAsyncSocket's `errnoErrorWithReason:` makes
    /// it: `NSPOSIXErrorDomain`, the errno as the code.
    func testRefusedConnectIsAnErrnoErrorInThePOSIXDomain() throws {
        let closed = try RawListener(host: "127.0.0.1", listen: false)  // bound, so nobody else listens there
        let delegate = makeDelegate("client")
        let sock = makeSocket(delegate)
        try sock.connect(toHost: "127.0.0.1", onPort: closed.port, withTimeout: testTimeout)
        let error = try XCTUnwrap(delegate.waitForDisconnect())
        let nsError = error as NSError
        XCTAssertEqual(nsError.domain, NSPOSIXErrorDomain)
        XCTAssertEqual(nsError.code, Int(ECONNREFUSED))
        XCTAssertFalse(nsError.localizedDescription.isEmpty)
    }

    /// Errors that are not failed system calls keep GCDAsyncSocket's own domain and codes.
    func testOtherErrorsKeepTheGCDAsyncSocketDomain() throws {
        let delegate = makeDelegate("client")
        let sock = makeSocket(delegate)
        let listener = try RawListener(host: "127.0.0.1")
        try sock.connect(toHost: "127.0.0.1", onPort: listener.port, withTimeout: testTimeout)
        let peer = try listener.accept()
        delegate.waitForConnect()
        sock.readData(toLength: 4, withTimeout: -1, tag: 0)
        peer.close()
        let nsError = try XCTUnwrap(delegate.waitForDisconnect()) as NSError
        XCTAssertEqual(nsError.domain, GCDAsyncSocketErrorDomain)
        XCTAssertEqual(nsError.code, GCDAsyncSocketError.Code.closedError.rawValue)
    }

    /// GCDAsyncSocket closes a socket when it is deallocated; ported servers stop by releasing their
    /// listening socket. Here too: once released, the port refuses connections.
    func testListeningSocketReleasedByItsOwnerStopsListening() throws {
        let delegate = makeDelegate("server")
        var server: GCDAsyncSocket? = makeSocket(delegate)
        try server!.accept(onInterface: "127.0.0.1", port: 0)
        let port = server!.localPort
        let first = try RawSocket(connectTo: "127.0.0.1", port: port)
        let accepted = delegate.waitForAccepts(1)
        XCTAssertEqual(accepted.count, 1)
        weak let released = server
        server = nil
        settle(loop)
        XCTAssertNil(released, "nothing but its owner holds a listening socket")
        XCTAssertThrowsError(try RawSocket(connectTo: "127.0.0.1", port: port)) { error in
            XCTAssertEqual((error as? RawSocketError)?.errno, ECONNREFUSED, "the listening descriptor is closed")
        }
        // The connection it accepted lives on (its owner is the delegate's list).
        XCTAssertTrue(accepted[0].isConnected)
        accepted[0].disconnect()
        first.close()
    }

    /// The same for a listener on a Unix socket: released, its file is removed too.
    func testUnixListenerReleasedByItsOwnerRemovesItsFile() throws {
        let directory = try makeTempDirectory()
        let path = directory.file("released.sock")
        let delegate = makeDelegate("server")
        var server: GCDAsyncSocket? = makeSocket(delegate)
        try server!.accept(on: URL(fileURLWithPath: path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        server = nil
        settle(loop)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
    }
}
