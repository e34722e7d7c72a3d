// CocoaAsyncSocket's Tests/Shared/ObjC/GCDAsyncUdpSocketConnectionTests.m, translated line for line (see
// GCDAsyncSocketConnectionTests.swift for how), with two changes:
// - the server binds to 127.0.0.1 and port 0 (read back from `localPort()`), not every interface and a
//   random port;
// - a datagram refused by `maxSendBufferSize()` or by the kernel (`EMSGSIZE`, above 65,507 bytes over IPv4)
//   ends the test through `udpSocket(_:didNotSendDataWithTag:dueToError:)`: this library reports the send
//   and keeps the socket open, where GCDAsyncUdpSocket closes the socket (`udpSocketDidClose`), which is what
//   the original waits for (docs/udp.md, Migration notes).

import XCTest
import CocoaAsyncSocket

class GCDAsyncUdpSocketConnectionTests: XCTestCase, GCDAsyncUdpSocketDelegate {
    var portNumber: UInt16 = 0
    var clientSocket: GCDAsyncUdpSocket!
    var serverSocket: GCDAsyncUdpSocket!

    var testData: NSMutableData!
    var sendDataLength: Int = 0

    var expectation: XCTestExpectation!

    override func setUp() {
        super.setUp()
        // Put setup code here. This method is called before the invocation of each test method in the class.
        self.portNumber = 0
        self.clientSocket = GCDAsyncUdpSocket(delegate: self, delegateQueue: DispatchQueue.main)

        self.serverSocket = GCDAsyncUdpSocket(delegate: self, delegateQueue: DispatchQueue.main)

        self.testData = NSMutableData()

        let data = "test-data-".data(using: .utf8)!

        for _ in 0 ..< 7000
        {
            self.testData.append(data)
        }
    }

    override func tearDown() {
        // Put teardown code here. This method is called after the invocation of each test method in the class.
        super.tearDown()

        self.clientSocket = nil
        self.serverSocket = nil

        self.testData = nil
    }

    /// `[self.serverSocket bindToPort:self.portNumber error:&error] && [self.serverSocket beginReceiving:&error]`,
    /// on 127.0.0.1 and a port the OS picks.
    func bindAndReceive(_ error: inout Error?) -> Bool {
        let success = attempt(&error) { try self.serverSocket.bind(toPort: self.portNumber, interface: "127.0.0.1") }
            && attempt(&error) { try self.serverSocket.beginReceiving() }
        self.portNumber = self.serverSocket.localPort()
        return success
    }

    func randomLengthOfLargePacket() -> UInt16 {
        let minLength: UInt16 = 9217
        let maxLength = UInt16(UINT16_MAX)
        return minLength + UInt16(arc4random_uniform(UInt32(maxLength - minLength + 1)))
    }

    func randomLengthOfInvaildPacket() -> UInt32 {
        let minLength: UInt32 = 65536
        let maxLength = UInt32(self.testData.length)
        return minLength + arc4random_uniform(maxLength - minLength + 1)
    }

    func testSendBoardcastWithMicroPacket()
    {
        var error: Error? = nil
        var success = false
        success = bindAndReceive(&error)
        XCTAssertTrue(success, "UDP Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")

        let sendData = self.testData.subdata(with: NSRange(location: 0, length: Int(arc4random_uniform(9217))))
        NSLog("Send data Length is \(sendData.count)")
        self.sendDataLength = sendData.count

        self.clientSocket.send(sendData, toHost: "127.0.0.1", port: self.portNumber, withTimeout: 30, tag: 0)

        self.expectation = self.expectation(description: "Test Sending/Receving Micro Packet")
        self.waitForExpectations(timeout: 30) { error in
            if error != nil {
                NSLog("Error establishing test sending/receving micro packet")
            }
        }
    }

    func testSendBoardcastWithLargePacket()
    {
        var error: Error? = nil
        var success = false
        success = bindAndReceive(&error)
        XCTAssertTrue(success, "UDP Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")

        let sendData = self.testData.subdata(with: NSRange(location: 0, length: Int(self.randomLengthOfLargePacket())))
        NSLog("Send data Length is \(sendData.count)")
        self.sendDataLength = sendData.count
        self.clientSocket.send(sendData, toHost: "127.0.0.1", port: self.portNumber, withTimeout: 30, tag: 0)

        self.expectation = self.expectation(description: "Test Sending/Receving Large Packet")
        self.waitForExpectations(timeout: 30) { error in
            if error != nil {
                NSLog("Error establishing test sending/receving large Packet")
            }
        }
    }

    func testSendBoardcastWithInvaildPacket()
    {
        var error: Error? = nil
        var success = false
        success = bindAndReceive(&error)
        XCTAssertTrue(success, "UDP Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")

        let sendData = self.testData.subdata(with: NSRange(location: 0, length: Int(self.randomLengthOfInvaildPacket())))
        NSLog("Send data Length is \(sendData.count)")
        self.sendDataLength = sendData.count
        self.clientSocket.send(sendData, toHost: "127.0.0.1", port: self.portNumber, withTimeout: 30, tag: 0)

        self.expectation = self.expectation(description: "Test Sending/Receving Invaild Packet")
        self.waitForExpectations(timeout: 30) { error in
            if error != nil {
                NSLog("Error establishing test sending/receving invaild packet")
            }
        }
    }

    func testAlterMaxSendBufferSizeWithVaildValue()
    {
        var error: Error? = nil
        var success = false

        let dataLength = UInt16(arc4random_uniform(UInt32(UINT16_MAX)))
        NSLog("random data length is \(dataLength)")

        success = bindAndReceive(&error)
        XCTAssertTrue(success, "UDP Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")

        let sendData = self.testData.subdata(with: NSRange(location: 0, length: Int(dataLength)))
        NSLog("Send data Length is \(sendData.count)")

        self.clientSocket.setMaxSendBufferSize(dataLength)
        self.clientSocket.send(sendData, toHost: "127.0.0.1", port: self.portNumber, withTimeout: 30, tag: 0)
        self.sendDataLength = Int(dataLength)
        XCTAssertTrue(self.clientSocket.maxSendBufferSize() == dataLength, "Alter socket maxSendBufferSize fail on port \(self.portNumber) \(String(describing: error))")

        self.expectation = self.expectation(description: "Test Altering maxSendBufferSize With Vaild Value")
        self.waitForExpectations(timeout: 30) { error in
            if error != nil {
                NSLog("Error establishing altering maxSendBufferSize with vaild value ")
            }
        }
    }

    func testAlterMaxSendBufferSizeWithInvaildValue()
    {
        var error: Error? = nil
        var success = false

        let dataLength = UInt16(arc4random_uniform(UInt32(UINT16_MAX)))
        NSLog("random data length is \(dataLength)")

        success = bindAndReceive(&error)
        XCTAssertTrue(success, "UDP Server failed setting up socket on port \(self.portNumber) \(String(describing: error))")

        let sendData = self.testData.subdata(with: NSRange(location: 0, length: Int(dataLength) + 1))
        NSLog("Send data Length is \(sendData.count)")

        self.clientSocket.setMaxSendBufferSize(dataLength)
        self.clientSocket.send(sendData, toHost: "127.0.0.1", port: self.portNumber, withTimeout: 30, tag: 0)
        self.sendDataLength = Int(dataLength)
        XCTAssertTrue(self.clientSocket.maxSendBufferSize() == dataLength, "Alter socket maxSendBufferSize fail on port \(self.portNumber) \(String(describing: error))")

        self.expectation = self.expectation(description: "Test Altering maxSendBufferSize With Invaild Value")
        self.waitForExpectations(timeout: 30) { error in
            if error != nil {
                NSLog("Error establishing altering maxSendBufferSize with invaild value ")
            }
        }
    }

    // MARK: GCDAsyncUdpSocketDelegate methods
    /**
     * Called when the datagram with the given tag has been sent.
     **/
    func udpSocket(_ sock: GCDAsyncUdpSocket, didSendDataWithTag tag: Int)
    {
        NSLog("Send data")
    }

    /**
     * Called when the datagram could not be sent: here, where GCDAsyncUdpSocket would close the socket.
     **/
    func udpSocket(_ sock: GCDAsyncUdpSocket, didNotSendDataWithTag tag: Int, dueToError error: Error?)
    {
        NSLog("Did not send data, error is \(String(describing: error))")
        self.expectation.fulfill()
    }

    func udpSocketDidClose(_ sock: GCDAsyncUdpSocket, withError error: Error?)
    {
        NSLog("Close socket, error is \(String(describing: error))")
        self.expectation.fulfill()
    }

    func udpSocket(_ sock: GCDAsyncUdpSocket, didReceive data: Data, fromAddress address: Data, withFilterContext filterContext: Any?)
    {
        XCTAssertTrue(data.count == self.sendDataLength, "UDP packet is truncated on port \(self.portNumber)")
        NSLog("Receive data")
        self.expectation.fulfill()
    }
}
