import CEpollShim
import COpenSSL
import Foundation
import Glibc
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// An idle TLS connection holds no OpenSSL record buffers (about 17 KB to read and 17 KB to write, each):
/// every context sets `SSL_MODE_RELEASE_BUFFERS`, so OpenSSL frees them once a record is through, and the
/// engine does not call `SSL_read` without input (which would allocate the read buffer again and keep it).
final class TLSIdleBuffersTests: TLSTestCase {
    /// Connection pairs held idle in the heap check.
    static let pairs = 8

    /// The mode is on every context, server's and client's, and on the connections made from them.
    func testEveryContextReleasesBuffers() throws {
        for configuration in [TLSConfiguration.server(identity: try Self.identity()), Self.client()] {
            let context = try TLSContext.shared(for: configuration)
            XCTAssertNotEqual(Self.contextMode(context.ctx) & Int(SSL_MODE_RELEASE_BUFFERS), 0, "\(configuration.role)")
        }
    }

    /// After the handshake and one round trip (so a TLS 1.3 client has read the server's tickets), neither
    /// end's SSL object holds a buffer: `SSL_free_buffers` on every one of them frees nothing. A connection
    /// whose buffers are allocated on purpose (`SSL_alloc_buffers`) shows that the check sees them.
    func testIdleConnectionsHoldNoRecordBuffers() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        var clients: [GCDAsyncSocket] = []
        for index in 0..<Self.pairs {
            let (client, _) = try connectWithOneRoundTrip("client \(index)", port: server.localPort, Self.client())
            clients.append(client)
        }
        let accepted = serverDelegate.waitForAccepts(Self.pairs)
        XCTAssertEqual(accepted.count, Self.pairs)
        let sockets = clients + accepted
        XCTAssertTrue(sockets.allSatisfy { $0.eventLoop === loop }, "one loop, so one closure sees every connection still")
        let box = UncheckedSendable(sockets)
        let (modes, held, control) = try onLoop(loop) { () -> ([Int], Int, Int) in
            let ssls = box.value.compactMap { sock -> OpaquePointer? in
                guard case .tls(let tls) = sock.transport else { return nil }
                return tls.ssl
            }
            let modes = ssls.map { Self.connectionMode($0) }
            let held = Self.freedBytes(ssls)
            // The control: buffers allocated on one connection are seen, and freed, by the same measurement.
            let allocated = ssls.first.map { SSL_alloc_buffers($0) } ?? 0
            let control = allocated == 1 ? Self.freedBytes(Array(ssls.prefix(1))) : -1
            return (modes, held, control)
        }
        XCTAssertEqual(modes.count, 2 * Self.pairs, "every socket runs TLS")
        XCTAssertTrue(modes.allSatisfy { $0 & Int(SSL_MODE_RELEASE_BUFFERS) != 0 }, "modes \(modes)")
        guard !Self.sanitized else { return }  // a sanitizer's allocator does not keep glibc's counts
        XCTAssertGreaterThanOrEqual(control, 16 * 1024, "SSL_alloc_buffers then SSL_free_buffers on one connection")
        XCTAssertGreaterThanOrEqual(held, 0, "no record pending on an idle connection")
        XCTAssertLessThan(held, 1024, "bytes \(2 * Self.pairs) idle SSL objects held in record buffers")
    }

    // MARK: Helpers

    /// The context's mode (`SSL_CTX_get_mode`, a macro over `SSL_CTX_ctrl`).
    private static func contextMode(_ ctx: OpaquePointer) -> Int {
        SSL_CTX_ctrl(ctx, SSL_CTRL_MODE, 0, nil)
    }

    /// The connection's mode (`SSL_get_mode`).
    private static func connectionMode(_ ssl: OpaquePointer) -> Int {
        SSL_ctrl(ssl, SSL_CTRL_MODE, 0, nil)
    }

    /// The heap bytes glibc counts as no longer in use after `SSL_free_buffers` on each of `ssls` (run on
    /// their loop, which nothing else runs on meanwhile); -1 if one of them had a record pending (it frees
    /// nothing then). Buffers are allocated again on demand afterwards.
    private static func freedBytes(_ ssls: [OpaquePointer]) -> Int {
        let before = mallinfo2().uordblks
        var pending = false
        for ssl in ssls where SSL_free_buffers(ssl) != 1 { pending = true }
        return pending ? -1 : Int(before) - Int(mallinfo2().uordblks)
    }

    private static let sanitized = dlsym(nil, "__tsan_init") != nil || dlsym(nil, "__asan_init") != nil
}
