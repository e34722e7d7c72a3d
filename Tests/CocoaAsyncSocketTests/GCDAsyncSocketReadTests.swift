// CocoaAsyncSocket's read test (Tests/Shared/Swift/GCDAsyncSocketReadTests.swift): a TLS read of more bytes
// than one wakeup brings in completes instead of timing out. The server's identity is a PKCS#12 file
// (TestServer.identity).

import XCTest

class GCDAsyncSocketReadTests: XCTestCase {
    func test_whenBytesAvailableIsLessThanReadLength_readDoesNotTimeout() {
        TestSocket.waiterDelegate = self

        let server = TestServer()
        let (client, accepted) = server.createSecurePair()
        defer {
            client.close()
            accepted.close()
            server.close()
        }

        // The first write wakes the client's reader; the second leaves more on the socket than one TLS read
        // takes in (GCDAsyncSocket's bound was the bytes available plus 16 KiB).
        accepted.write(bytes: 1024 * 50)
        accepted.write(bytes: 1024 * 50)

        // The read must neither disconnect nor time out.
        client.onDisconnect = {
            XCTFail("Socket was disconnected")
        }
        client.read(bytes: 1024 * 100)

        XCTAssertEqual(client.bytesRead, 1024 * 100)
    }
}
