import Foundation
import XCTest

@testable import LoopSocket

/// Write timeouts over TLS: a write whose bytes were encrypted has begun, exactly as one whose bytes reached
/// the kernel, and the ciphertext counted for it is never credited to another write.
final class TLSTimeoutTests: TLSTestCase {
    /// With `timeoutsFailOnlyTheOperation`, a TLS write that times out after its first records were encrypted
    /// closes the connection with the timeout error: failing it alone would leave its encrypted batch to be
    /// sent later and counted to the next write, which would then be reported written while short.
    func testAStartedTLSWriteThatTimesOutClosesTheConnection() throws {
        let serverDelegate = makeDelegate("server")
        let serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverDelegate.configure { hooks in
            hooks.accept = { _, child in
                child.timeoutsFailOnlyTheOperation = true
                child.startTLS(serverTLS)
                // The client never reads: the first write cannot finish, and times out after it began.
                child.write(patternData(32 << 20), withTimeout: 0.2, tag: 1)
                child.write(Data("after".utf8), withTimeout: -1, tag: 2)
            }
        }
        let server = try makeServer(serverDelegate) { $0.options.sendBufferSize = 8192 }
        let delegate = makeDelegate("client")
        let client = try connectTLSClient(delegate, port: server.localPort, Self.client())
        waitForSecure(delegate, client)
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts(1).first)
        let error = serverDelegate.waitForDisconnect(of: accepted)
        XCTAssertEqual(error.socketCode, .writeTimeoutError)
        let wrote = serverDelegate.count(of: accepted) { if case .wrote = $0 { return true } else { return false } }
        let failed = serverDelegate.count(of: accepted) { if case .failedWrite = $0 { return true } else { return false } }
        XCTAssertEqual(wrote, 0, "no write reached the peer whole")
        XCTAssertEqual(failed, 2, "both writes end in a failure")
    }
}
