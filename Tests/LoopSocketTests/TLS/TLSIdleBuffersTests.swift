import CEpollShim
import COpenSSL
import Foundation
import Glibc
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// An idle TLS connection holds no OpenSSL record buffers (a little over 16 KiB to read and as much to
/// write) unless ``TLSConfiguration/releasesIdleBuffers`` is off: contexts set `SSL_MODE_RELEASE_BUFFERS`,
/// and the engine frees what OpenSSL still holds once a read's input is decrypted (after a TLS 1.3 client has
/// read the server's tickets, the mode alone leaves one buffer).
final class TLSIdleBuffersTests: TLSTestCase {
    /// Connection pairs held idle in the heap checks.
    static let pairs = 8
    /// Rounds of the heap check before a reading over its bound fails the test.
    static let rounds = 3

    /// The mode is on every context, server's and client's, by default, and off when the setting is.
    func testContextsReleaseBuffersUnlessTold() throws {
        for keeps in [false, true] {
            var server = TLSConfiguration.server(identity: try Self.identity())
            server.releasesIdleBuffers = !keeps
            let client = Self.client { $0.releasesIdleBuffers = !keeps }
            for configuration in [server, client] {
                let mode = Self.contextMode(try TLSContext.shared(for: configuration).ctx)
                XCTAssertEqual(mode & Int(SSL_MODE_RELEASE_BUFFERS) != 0, !keeps, "\(configuration.role), kept \(keeps)")
            }
        }
    }

    /// After the handshake and one round trip (so a TLS 1.3 client has read the server's ticket), neither
    /// end's SSL object holds a buffer: `SSL_free_buffers` on every one of them frees nothing. A connection
    /// whose buffers are allocated on purpose (`SSL_alloc_buffers`) shows that the check sees them.
    ///
    /// glibc's counts are the whole process's, so another thread's free or allocation inside the measured
    /// window reads as a held buffer or a missed one. A round whose reading is off is repeated with new
    /// connections; a connection that keeps its buffers fails every round.
    func testIdleConnectionsHoldNoRecordBuffers() throws {
        let bound = 16 * 1024
        var readings: [String] = []
        for _ in 0..<Self.rounds {
            let idle = try holdIdlePairs(releasing: true)
            XCTAssertEqual(idle.modes.count, 2 * Self.pairs, "every socket runs TLS")
            XCTAssertTrue(idle.modes.allSatisfy { $0 & Int(SSL_MODE_RELEASE_BUFFERS) != 0 }, "modes \(idle.modes)")
            guard !Self.sanitized else { return }  // a sanitizer's allocator does not keep glibc's counts
            let held = try XCTUnwrap(idle.held, "no record pending on an idle connection")
            let control = idle.control ?? 0
            if held.reduce(0, +) < bound, control >= 2 * Self.pairs * bound { return }
            readings.append("held \(held), SSL_alloc_buffers then SSL_free_buffers \(control)")
        }
        XCTFail("bytes \(2 * Self.pairs) idle SSL objects held in record buffers, each round: \(readings)")
    }

    /// With the setting off, every idle connection keeps its buffers: at least one of 16 KiB per SSL object.
    func testIdleConnectionsKeepBuffersWhenTold() throws {
        let idle = try holdIdlePairs(releasing: false)
        XCTAssertEqual(idle.modes.count, 2 * Self.pairs, "every socket runs TLS")
        XCTAssertTrue(idle.modes.allSatisfy { $0 & Int(SSL_MODE_RELEASE_BUFFERS) == 0 }, "modes \(idle.modes)")
        guard !Self.sanitized else { return }
        XCTAssertGreaterThanOrEqual(idle.held?.reduce(0, +) ?? 0, 2 * Self.pairs * 16 * 1024, "bytes the idle SSL objects held")
    }

    // MARK: Helpers

    private struct Idle {
        /// Each connection's mode (clients, then the server's ends).
        var modes: [Int]
        /// The heap bytes `SSL_free_buffers` freed on each; nil if one had a record pending.
        var held: [Int]?
        /// What it freed on them all after `SSL_alloc_buffers` (nil if that failed).
        var control: Int?
    }

    /// Opens `pairs` client connections to a TLS echo server, one round trip each, and measures on the loop
    /// what their SSL objects hold.
    private func holdIdlePairs(releasing: Bool) throws -> Idle {
        var serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverTLS.releasesIdleBuffers = releasing
        let clientTLS = Self.client { $0.releasesIdleBuffers = releasing }
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, serverTLS)
        var clients: [GCDAsyncSocket] = []
        for index in 0..<Self.pairs {
            clients.append(try connectWithOneRoundTrip("client \(index)", port: server.localPort, clientTLS).0)
        }
        let accepted = serverDelegate.waitForAccepts(Self.pairs)
        XCTAssertEqual(accepted.count, Self.pairs)
        let sockets = clients + accepted
        XCTAssertTrue(sockets.allSatisfy { $0.eventLoop === loop }, "one loop, so one closure sees every connection still")
        let box = UncheckedSendable(sockets)
        return try onLoop(loop) { () -> Idle in
            let ssls = box.value.compactMap { sock -> OpaquePointer? in
                guard let tls = sock.tlsLayer else { return nil }
                return tls.ssl
            }
            let modes = ssls.map { Self.connectionMode($0) }
            let held = Self.freedBytes(ssls)
            // The control: buffers allocated on purpose are seen, and freed, by the same measurement.
            let allocated = ssls.allSatisfy { SSL_alloc_buffers($0) == 1 }
            let control = allocated ? Self.freedBytes(ssls)?.reduce(0, +) : nil
            return Idle(modes: modes, held: held, control: control)
        }
    }

    /// The context's mode (`SSL_CTX_get_mode`, a macro over `SSL_CTX_ctrl`).
    private static func contextMode(_ ctx: OpaquePointer) -> Int {
        SSL_CTX_ctrl(ctx, SSL_CTRL_MODE, 0, nil)
    }

    /// The connection's mode (`SSL_get_mode`).
    private static func connectionMode(_ ssl: OpaquePointer) -> Int {
        SSL_ctrl(ssl, SSL_CTRL_MODE, 0, nil)
    }

    /// The heap bytes glibc counts as no longer in use after `SSL_free_buffers` on each of `ssls`, one window
    /// per object so another thread has little time to move the counts (run on their loop, which none of
    /// their events can run on meanwhile); nil if one of them had a record pending (it frees nothing then).
    /// Buffers are allocated again on demand afterwards.
    private static func freedBytes(_ ssls: [OpaquePointer]) -> [Int]? {
        var freed: [Int] = []
        freed.reserveCapacity(ssls.count)
        for ssl in ssls {
            let before = mallinfo2().uordblks
            guard SSL_free_buffers(ssl) == 1 else { return nil }
            freed.append(Int(before) - Int(mallinfo2().uordblks))
        }
        return freed
    }

    private static let sanitized = dlsym(nil, "__tsan_init") != nil || dlsym(nil, "__asan_init") != nil
}
