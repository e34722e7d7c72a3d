// CocoaAsyncSocket's Tests/Shared/ObjC/GCDAsyncSocketConnectionTests.m, translated line for line: the same
// tests, steps and assertions. Objective-C's conventions become Swift's: a `BOOL` result with an `NSError **`
// is a throwing call (`attempt(_:_:)` keeps the pair), a message to nil answers NO (`?? false`), `%@`
// arguments are interpolated. As everywhere in this project's tests, the server listens on "localhost" and
// port 0 (the port is read back from `localPort`) where the original listens on every interface on a
// random port.
//
// The two tests that read the accepted socket in their wait's handler, once the client's `didConnectToHost`
// has come, rely on the server's `didAcceptNewSocket` having run first: LoopSocket promises that order for
// two sockets of one process (docs/migrating-from-gcdasyncsocket.md, "A client and a listener in one process").

import XCTest
import CocoaAsyncSocket

class GCDAsyncSocketConnectionTests: XCTestCase, GCDAsyncSocketDelegate {
    var portNumber: UInt16 = 0
    var clientSocket: GCDAsyncSocket!
    var serverSocket: GCDAsyncSocket!
    var acceptedServerSocket: GCDAsyncSocket!

    var expectation: XCTestExpectation!

    override func setUp() {
        super.setUp()
        // Put setup code here. This method is called before the invocation of each test method in the class.
        self.portNumber = 0
        self.clientSocket = GCDAsyncSocket(delegate: self, delegateQueue: DispatchQueue.main)
        self.serverSocket = GCDAsyncSocket(delegate: self, delegateQueue: DispatchQueue.main)
    }

    override func tearDown() {
        // Put teardown code here. This method is called after the invocation of each test method in the class.
        super.tearDown()
        self.clientSocket.disconnect()
        self.serverSocket.disconnect()
        self.acceptedServerSocket?.disconnect()
        self.clientSocket = nil
        self.serverSocket = nil
        self.acceptedServerSocket = nil
    }

    /// `[self.serverSocket acceptOnPort:self.portNumber error:&error]`, on loopback and a port the OS picks.
    func acceptOnLoopback(_ error: inout Error?) -> Bool {
        let success = attempt(&error) { try self.serverSocket.accept(onInterface: "localhost", port: self.portNumber) }
        self.portNumber = self.serverSocket.localPort
        return success
    }

    func testFullConnection() {
        var error: Error? = nil
        var success = false
        success = acceptOnLoopback(&error)
        XCTAssertTrue(success, "Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")
        success = attempt(&error) { try self.clientSocket.connect(toHost: "127.0.0.1", onPort: self.portNumber) }
        XCTAssertTrue(success, "Client failed connecting to up server socket on port \(self.portNumber) \(String(describing: error))")

        self.expectation = self.expectation(description: "Test Full Connection")
        self.waitForExpectations(timeout: 30) { error in
            if error != nil {
                NSLog("Error establishing test connection")
            }
        }
    }

    func testConnectionWithAnIPv4OnlyServer() {
        self.serverSocket.isIPv6Enabled = false

        var error: Error? = nil
        var success = false
        success = acceptOnLoopback(&error)
        XCTAssertTrue(success, "Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")
        success = attempt(&error) { try self.clientSocket.connect(toHost: "127.0.0.1", onPort: self.portNumber) }
        XCTAssertTrue(success, "Client failed connecting to up server socket on port \(self.portNumber) \(String(describing: error))")

        self.expectation = self.expectation(description: "Test Full Connection")
        self.waitForExpectations(timeout: 30) { error in
            if error != nil {
                NSLog("Error establishing test connection")
            }
            else {
                XCTAssertTrue(self.acceptedServerSocket?.isIPv4 ?? false, "Established connection is not IPv4")
            }
        }
    }

    func testConnectionWithAnIPv6OnlyServer() {
        self.serverSocket.isIPv4Enabled = false

        var error: Error? = nil
        var success = false
        success = acceptOnLoopback(&error)
        XCTAssertTrue(success, "Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")
        success = attempt(&error) { try self.clientSocket.connect(toHost: "::1", onPort: self.portNumber) }
        XCTAssertTrue(success, "Client failed connecting to up server socket on port \(self.portNumber) \(String(describing: error))")

        self.expectation = self.expectation(description: "Test Full Connection")
        self.waitForExpectations(timeout: 30) { error in
            if error != nil {
                NSLog("Error establishing test connection")
            }
            else {
                XCTAssertTrue(self.acceptedServerSocket?.isIPv6 ?? false, "Established connection is not IPv6")
            }
        }
    }

    func testConnectionWithLocalhostWithClientPreferringIPv4() {
        self.clientSocket.isIPv4PreferredOverIPv6 = true

        var error: Error? = nil
        var success = false
        success = acceptOnLoopback(&error)
        XCTAssertTrue(success, "Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")
        success = attempt(&error) { try self.clientSocket.connect(toHost: "localhost", onPort: self.portNumber) }
        XCTAssertTrue(success, "Client failed connecting to up server socket on port \(self.portNumber) \(String(describing: error))")

        self.expectation = self.expectation(description: "Test Full Connection")
        self.waitForExpectations(timeout: 30) { error in
            if error != nil {
                NSLog("Error establishing test connection")
            }
        }
    }

    func testConnectionWithLocalhostWithClientPreferringIPv6() {
        self.clientSocket.isIPv4PreferredOverIPv6 = false

        var error: Error? = nil
        var success = false
        success = acceptOnLoopback(&error)
        XCTAssertTrue(success, "Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")
        success = attempt(&error) { try self.clientSocket.connect(toHost: "localhost", onPort: self.portNumber) }
        XCTAssertTrue(success, "Client failed connecting to up server socket on port \(self.portNumber) \(String(describing: error))")

        self.expectation = self.expectation(description: "Test Full Connection")
        self.waitForExpectations(timeout: 30) { error in
            if error != nil {
                NSLog("Error establishing test connection")
            }
        }
    }

    func testConnectionWithLocalhostWithConnectedSocketFD4() {
        self.serverSocket.isIPv6Enabled = false

        var error: Error? = nil
        var success = false
        success = acceptOnLoopback(&error)
        XCTAssertTrue(success, "Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")

        var socketFD4: Int32
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = self.portNumber.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")

        socketFD4 = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), Int32(IPPROTO_TCP))
        XCTAssertTrue(socketFD4 >= 0, "Failed to create IPv4 socket")

        let errorCode = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socketFD4, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        XCTAssertTrue(errorCode == 0, "Failed to connect to server")

        var socket: GCDAsyncSocket? = nil
        _ = attempt(&error) { socket = try GCDAsyncSocket(fromConnectedSocketFD: socketFD4, delegate: nil, delegateQueue: nil) }
        XCTAssertTrue(socket != nil && error == nil, "Failed to create socket from socket FD")

        XCTAssertTrue(socket?.isConnected ?? false, "GCDAsyncSocket is should connected")
        XCTAssertTrue(socket?.connectedHost == "127.0.0.1", "Something is wrong with GCDAsyncSocket. Connected host is wrong")
        XCTAssertTrue(socket?.connectedPort == self.portNumber, "Something is wrong with the GCDAsyncSocket. Connected port is wrong")
    }

    func testConnectionWithLocalhostWithConnectedSocketFD6() {
        self.serverSocket.isIPv4Enabled = false

        var error: Error? = nil
        var success = false
        success = acceptOnLoopback(&error)
        XCTAssertTrue(success, "Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")

        var socketFD6: Int32
        var addr = sockaddr_in6()
        addr.sin6_family = sa_family_t(AF_INET6)
        addr.sin6_port = self.portNumber.bigEndian
        inet_pton(AF_INET6, "::1", &addr.sin6_addr)

        socketFD6 = Glibc.socket(AF_INET6, Int32(SOCK_STREAM.rawValue), Int32(IPPROTO_TCP))
        XCTAssertTrue(socketFD6 >= 0, "Failed to create IPv6 socket")

        let errorCode = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socketFD6, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
        XCTAssertTrue(errorCode == 0, "Failed to connect to server")

        var socket: GCDAsyncSocket? = nil
        _ = attempt(&error) { socket = try GCDAsyncSocket(fromConnectedSocketFD: socketFD6, delegate: nil, delegateQueue: nil) }
        XCTAssertTrue(socket != nil && error == nil, "Failed to create socket from socket FD")

        XCTAssertTrue(socket?.isConnected ?? false, "GCDAsyncSocket is should connected")
        XCTAssertTrue(socket?.connectedHost == "::1", "Something is wrong with GCDAsyncSocket. Connected host is wrong")
        XCTAssertTrue(socket?.connectedPort == self.portNumber, "Something is wrong with the GCDAsyncSocket. Connected port is wrong")
    }

    // MARK: GCDAsyncSocketDelegate methods

    /**
     * Called when a socket accepts a connection.
     * Another socket is automatically spawned to handle it.
     *
     * You must retain the newSocket if you wish to handle the connection.
     * Otherwise the newSocket instance will be released and the spawned connection will be closed.
     *
     * By default the new socket will have the same delegate and delegateQueue.
     * You may, of course, change this at any time.
     **/
    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        NSLog("didAcceptNewSocket \(sock) \(newSocket)")
        self.acceptedServerSocket = newSocket
    }

    /**
     * Called when a socket connects and is ready for reading and writing.
     * The host parameter will be an IP address, not a DNS name.
     **/
    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        NSLog("didConnectToHost \(sock) \(host) \(port)")
        self.expectation.fulfill()
    }
}

/// Objective-C's `BOOL` result with an `NSError **` out-parameter: runs `body`, stores what it throws in
/// `errorPtr`, and answers whether it succeeded.
func attempt(_ errorPtr: inout Error?, _ body: () throws -> Void) -> Bool {
    do {
        try body()
        return true
    } catch {
        errorPtr = error
        return false
    }
}
