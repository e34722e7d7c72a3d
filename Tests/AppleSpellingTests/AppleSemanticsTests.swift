import CocoaAsyncSocket
import XCTest

/// What the spelling files cannot show at compile time: equality, hashing and subclassing behave as for
/// Apple's `NSObject` subclasses, the Apple-only forms mean what they mean there.
final class AppleSemanticsTests: XCTestCase {
    /// A subclass, as apps write them to keep state with the socket. (Swift 6 asks a subclass of a `Sendable`
    /// class to restate the conformance: without it, a warning.)
    final class SessionSocket: GCDAsyncSocket, @unchecked Sendable {
        var sessionID = 0
    }

    final class UdpSubclass: GCDAsyncUdpSocket, @unchecked Sendable {
        var label = ""
    }

    func testTheSpellingFunctionsAreCompiled() {
        // They are compiled, not run: each line would act on a socket. Referencing them keeps them honest.
        let all: [Any] = [
            gcdAsyncSocketConstantsAndError, gcdAsyncSocketInitialisers, gcdAsyncSocketMembers,
            gcdAsyncUdpSocketConstantsAndError, gcdAsyncUdpSocketMembers,
        ]
        XCTAssertEqual(all.count, 5)
    }

    func testSocketsAreEqualAndHashedByIdentity() {
        let a = GCDAsyncSocket(), b = GCDAsyncSocket()
        XCTAssertEqual(a, a)
        XCTAssertNotEqual(a, b)
        let clients = [a, b]
        XCTAssertEqual(clients.firstIndex(of: b), 1)
        var sessions: [GCDAsyncSocket: String] = [a: "a"]
        sessions[b] = "b"
        XCTAssertEqual(sessions[a], "a")
        XCTAssertEqual(sessions[b], "b")
        XCTAssertEqual(Set([a, a, b]).count, 2)

        let u = GCDAsyncUdpSocket(), v = GCDAsyncUdpSocket()
        XCTAssertEqual(Set([u, v, u]).count, 2)
        XCTAssertEqual([u, v].firstIndex(of: v), 1)
    }

    func testSubclassesInheritTheInitialisersAndCompareWithTheirBase() {
        let sock = SessionSocket(delegate: nil, delegateQueue: DispatchQueue(label: "delegate"))
        sock.sessionID = 7
        let base: GCDAsyncSocket = sock
        XCTAssertEqual(base, sock)
        XCTAssertEqual((base as? SessionSocket)?.sessionID, 7)
        XCTAssertTrue(SessionSocket(socketQueue: nil).isDisconnected)
        XCTAssertFalse(UdpSubclass(delegate: nil, delegateQueue: nil, socketQueue: nil).isConnected())
    }

    func testErrorInitialisersAndBridging() {
        let plain = GCDAsyncSocketError(.closedError)
        XCTAssertEqual(plain.code, .closedError)
        XCTAssertEqual((plain as NSError).domain, GCDAsyncSocketErrorDomain)
        XCTAssertEqual((plain as NSError).code, 7)
        let described = GCDAsyncSocketError(.otherError, userInfo: [NSLocalizedDescriptionKey: "gone", "k": 1])
        XCTAssertEqual(described.localizedDescription, "gone")
        XCTAssertEqual(described.userInfo["k"] as? Int, 1)
        XCTAssertEqual(described, GCDAsyncSocketError(.otherError, userInfo: [NSLocalizedDescriptionKey: "gone", "k": 1]))
        XCTAssertNotEqual(described, GCDAsyncSocketError(.otherError, userInfo: [NSLocalizedDescriptionKey: "gone", "k": 2]))
        let back = GCDAsyncSocketError(_nsError: described as NSError)
        XCTAssertEqual(back.code, .otherError)
        XCTAssertEqual(back.localizedDescription, "gone")
        let posix = GCDAsyncSocketError(_nsError: NSError(domain: NSPOSIXErrorDomain, code: Int(ECONNREFUSED)))
        XCTAssertEqual((posix as NSError).domain, NSPOSIXErrorDomain)
        XCTAssertEqual((posix as NSError).code, Int(ECONNREFUSED))

        let udp = GCDAsyncUdpSocketError(.sendTimeoutError)
        XCTAssertEqual((udp as NSError).code, 3)
        XCTAssertEqual(GCDAsyncUdpSocketError(_nsError: udp as NSError).code, .sendTimeoutError)
        do { throw GCDAsyncUdpSocketError(.closedError) } catch GCDAsyncUdpSocketError.closedError {} catch {
            XCTFail("\(error)")
        }
    }

    func testOptionalWritesAndSeparatorsAreNoOpsWhenNil() {
        let sock = GCDAsyncSocket()
        let nothing: Data? = nil
        sock.write(nothing, withTimeout: -1, tag: 0)
        sock.readData(to: nothing, withTimeout: -1, tag: 0)
        XCTAssertTrue(sock.isDisconnected)
    }

    func testGetHostReturnsAnNSString() throws {
        let addresses: NSMutableArray = try GCDAsyncSocket.lookupHost("127.0.0.1", port: 8080)
        let address = try XCTUnwrap(addresses.firstObject as? Data)
        var host: NSString?
        var port: UInt16 = 0
        var family: sa_family_t = 0
        XCTAssertTrue(GCDAsyncSocket.getHost(&host, port: &port, family: &family, fromAddress: address))
        XCTAssertEqual(host, "127.0.0.1")
        XCTAssertEqual(port, 8080)
        XCTAssertEqual(Int32(family), AF_INET)
        var udpHost: NSString?
        XCTAssertTrue(GCDAsyncUdpSocket.getHost(&udpHost, port: nil, fromAddress: address))
        XCTAssertEqual(udpHost, "127.0.0.1")
        XCTAssertFalse(GCDAsyncSocket.getHost(nil, port: nil, fromAddress: Data([0, 0])))
    }

    func testGetDelegateReadsBoth() {
        let delegate = EveryCallbackDelegate()
        let queue = DispatchQueue(label: "delegate")
        let sock = GCDAsyncSocket(delegate: delegate, delegateQueue: queue, socketQueue: nil)
        var delegateOut: (any GCDAsyncSocketDelegate)?
        var queueOut: DispatchQueue?
        sock.getDelegate(&delegateOut, delegateQueue: &queueOut)
        XCTAssertTrue(delegateOut === delegate)
        XCTAssertTrue(queueOut === queue)
        sock.getDelegate(nil, delegateQueue: nil)
    }
}
