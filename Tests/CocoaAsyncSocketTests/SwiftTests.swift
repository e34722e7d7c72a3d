// CocoaAsyncSocket's Swift test case (Tests/Shared/Swift/SwiftTests.swift): the same tests, making the same
// calls into CocoaAsyncSocket, spelled as an iOS or macOS app spells them, and asserting the same. What differs
// is Linux's or this project's, not CocoaAsyncSocket's:
// - the server listens on "localhost" and port 0 (the OS picks a free port, read back from `localPort`)
//   where the original listens on every interface on a random port;
// - the log lines interpolate the sockets (`%@` takes an `NSObject`; docs/migrating-from-gcdasyncsocket.md);
// - the raw-descriptor tests call Glibc's `socket` and `connect` and swap the port with `bigEndian`.

import XCTest
import CocoaAsyncSocket

class SwiftTests: XCTestCase, GCDAsyncSocketDelegate {
    var portNumber: UInt16 = 0
    var clientSocket: GCDAsyncSocket?
    var serverSocket: GCDAsyncSocket?
    var acceptedServerSocket: GCDAsyncSocket?
    var expectation: XCTestExpectation?

    override func setUp() {
        super.setUp()
        portNumber = 0
        clientSocket = GCDAsyncSocket(delegate: self, delegateQueue: DispatchQueue.main)
        serverSocket = GCDAsyncSocket(delegate: self, delegateQueue: DispatchQueue.main)
    }

    override func tearDown() {
        super.tearDown()
        clientSocket?.disconnect()
        serverSocket?.disconnect()
        acceptedServerSocket?.disconnect()
        clientSocket = nil
        serverSocket = nil
        acceptedServerSocket = nil
    }

    /// The server listens (the original's `accept(onPort: portNumber)`), the client connects to `host`, and the
    /// test waits for `didConnectToHost`; `verify` then runs as the original's wait handler does.
    private func connect(to host: String, verify: (() -> Void)? = nil) {
        XCTAssertNoThrow(try serverSocket?.accept(onInterface: "localhost", port: portNumber))
        portNumber = serverSocket?.localPort ?? 0
        XCTAssertNoThrow(try clientSocket?.connect(toHost: host, onPort: portNumber))
        expectation = self.expectation(description: "Test Full connnection")
        waitForExpectations(timeout: 30) { error in
            if let error {
                XCTFail("\(error)")
            } else {
                verify?()
            }
        }
    }

    func testFullConnection() {
        connect(to: "127.0.0.1")
    }

    func testConnectionWithAnIPv4OnlyServer() {
        serverSocket?.isIPv6Enabled = false
        connect(to: "127.0.0.1") {
            if let isIPv4 = self.acceptedServerSocket?.isIPv4 {
                XCTAssertTrue(isIPv4)
            }
        }
    }

    func testConnectionWithAnIPv6OnlyServer() {
        serverSocket?.isIPv4Enabled = false
        connect(to: "::1") {
            if let isIPv6 = self.acceptedServerSocket?.isIPv6 {
                XCTAssertTrue(isIPv6)
            }
        }
    }

    func testConnectionWithLocalhostWithClientPreferringIPv4() {
        clientSocket?.isIPv4PreferredOverIPv6 = true
        connect(to: "localhost")
    }

    func testConnectionWithLocalhostWithClientPreferringIPv6() {
        clientSocket?.isIPv4PreferredOverIPv6 = false
        connect(to: "localhost")
    }

    func testConnectionWithLocalhostWithConnectedSocketFD4() {
        serverSocket?.isIPv6Enabled = false
        XCTAssertNoThrow(try serverSocket?.accept(onInterface: "localhost", port: portNumber))
        portNumber = serverSocket?.localPort ?? 0

        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(portNumber).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), Int32(IPPROTO_TCP))
        XCTAssertTrue(fd >= 0, "Failed to create IPv4 socket")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        XCTAssertTrue(status == 0, "Failed to connect to server")

        verifyAdopted(fd, host: "127.0.0.1")
    }

    func testConnectionWithLocalhostWithConnectedSocketFD6() {
        serverSocket?.isIPv4Enabled = false
        XCTAssertNoThrow(try serverSocket?.accept(onInterface: "localhost", port: portNumber))
        portNumber = serverSocket?.localPort ?? 0

        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = in_port_t(portNumber).bigEndian
        inet_pton(AF_INET6, "::1", &address.sin6_addr)
        let fd = Glibc.socket(AF_INET6, Int32(SOCK_STREAM.rawValue), Int32(IPPROTO_TCP))
        XCTAssertTrue(fd >= 0, "Failed to create IPv6 socket")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
        XCTAssertTrue(status == 0, "Failed to connect to server")

        verifyAdopted(fd, host: "::1")
    }

    /// A socket made from the connected descriptor `fd` is connected to `host` and the server's port.
    private func verifyAdopted(_ fd: Int32, host: String) {
        do {
            let socket = try GCDAsyncSocket.init(fromConnectedSocketFD: fd, delegate: nil, delegateQueue: nil)
            XCTAssertTrue(socket.isConnected, "GCDAsyncSocket is should connected")
            XCTAssertTrue(socket.connectedHost == host, "Something is wrong with GCDAsyncSocket. Connected host is wrong")
            XCTAssertTrue(socket.connectedPort == portNumber, "Something is wrong with the GCDAsyncSocket. Connected port is wrong")
        } catch {
            XCTFail("\(error)")
        }
    }

    // MARK: GCDAsyncSocketDelegate

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        NSLog("didAcceptNewSocket \(sock) \(newSocket)")
        acceptedServerSocket = newSocket
    }

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        NSLog("didConnectToHost \(sock) \(host) \(port)")
        expectation?.fulfill()
    }
}
