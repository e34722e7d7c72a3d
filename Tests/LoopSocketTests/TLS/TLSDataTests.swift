import Foundation
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Application data over TLS, our client against our server: sizes around the 16 KiB record limit, 32 MiB
/// full duplex, and the order of what is queued around `startTLS`.
final class TLSDataTests: TLSTestCase {
    /// Sizes on both sides of a record's 16,384-byte plaintext limit, and one of many records.
    static let sizes = [1, 16383, 16384, 16385, 1 << 20]

    private func securedPair() throws -> (client: GCDAsyncSocket, delegate: RecordingDelegate) {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let delegate = makeDelegate("client")
        let client = try connectTLSClient(delegate, port: server.localPort, Self.client())
        waitForSecure(delegate, client)
        return (client, delegate)
    }

    /// Each payload written alone and read back exactly before the next: each starts on a record boundary.
    func testPayloadsAroundTheRecordLimitOneAtATime() throws {
        let (client, delegate) = try securedPair()
        for (index, size) in Self.sizes.enumerated() {
            let payload = Data(patternData(size + index).dropFirst(index))  // a different start each time
            let tag = index + 1
            client.write(payload, withTimeout: testTimeout, tag: tag)
            client.readData(toLength: UInt(size), withTimeout: testTimeout, tag: tag)
            XCTAssertEqual(delegate.waitForReadBytes(size, tag: tag), payload, "\(size) bytes")
        }
    }

    /// Every payload queued at once, each read back by its exact length: records straddle the payloads both
    /// ways (the echo's are cut where the server's reads happened to end).
    func testPayloadsAroundTheRecordLimitQueuedTogether() throws {
        let (client, delegate) = try securedPair()
        let payloads = Self.sizes.enumerated().map { Data(patternData($0.element + $0.offset).dropFirst($0.offset)) }
        perform(client) {  // in one loop turn: the pump meets them all queued
            for (index, payload) in payloads.enumerated() { client.write(payload, withTimeout: testTimeout, tag: index + 1) }
        }
        for (index, size) in Self.sizes.enumerated() {
            client.readData(toLength: UInt(size), withTimeout: testTimeout, tag: index + 1)
        }
        delegate.waitForReadBytes(Self.sizes.reduce(0, +))
        let received = payloads.indices.map { delegate.readBytes(tag: $0 + 1, of: client) }
        for (index, payload) in payloads.enumerated() {
            XCTAssertTrue(received[index] == payload, "\(payload.count) bytes: \(Self.firstDifference([received[index]], [payload]))")
        }
        XCTAssertEqual(delegate.count(of: client) { if case .wrote = $0 { return true } else { return false } }, Self.sizes.count)
    }

    /// Two writes queued in one loop turn, the first longer than a record: the pump encrypts them in one pass.
    /// OpenSSL takes the first a record at a time (partial-write mode): it must go on from where it stopped
    /// before the second starts (it once moved on, losing the first's tail and repeating the second's bytes).
    func testTwoWritesQueuedTogetherTheFirstLongerThanOneRecord() throws {
        let (client, delegate) = try securedPair()
        let first = patternData(16385)
        let second = Data("second".utf8)
        perform(client) {
            client.write(first, withTimeout: testTimeout, tag: 1)
            client.write(second, withTimeout: testTimeout, tag: 2)
        }
        client.readData(toLength: UInt(first.count + second.count), withTimeout: testTimeout, tag: 3)
        let echoed = delegate.waitForReadBytes(first.count + second.count, tag: 3)
        XCTAssertTrue(echoed == first + second, Self.firstDifference([echoed], [first + second]))
    }

    /// Where `received` first differs from `expected`, for failure messages (never the whole payloads).
    static func firstDifference(_ received: [Data], _ expected: [Data]) -> String {
        for (index, (got, want)) in zip(received, expected).enumerated() where got != want {
            let a = [UInt8](got), b = [UInt8](want)
            let offset = zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
            return "payload \(index) (\(b.count) bytes, \(a.count) received) first differs at byte \(offset): "
                + "received \(Array(a[offset..<min(a.count, offset + 6)])), expected \(Array(b[offset..<min(b.count, offset + 6)]))"
        }
        return "no difference"
    }

    /// Both sides write 32 MiB at once, each queued before the handshake, and read 32 MiB: both arrive intact.
    /// The server's writes pass its high water mark, so its reads pause until the client has read enough.
    func testFullDuplex32MiB() throws {
        let size = 32 << 20
        let fromServer = patternData(size)
        let fromClient = Data(patternData(size + 7).dropFirst(7))
        let serverDelegate = makeDelegate("server")
        let serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverDelegate.configure { hooks in
            hooks.accept = { _, child in
                child.startTLS(serverTLS)
                child.write(fromServer, withTimeout: -1, tag: 1)
                child.readData(toLength: UInt(size), withTimeout: -1, tag: 1)
            }
        }
        let server = try makeServer(serverDelegate)
        let delegate = makeDelegate("client")
        let client = try connectTLSClient(delegate, port: server.localPort, Self.client())
        client.write(fromClient, withTimeout: -1, tag: 1)
        client.readData(toLength: UInt(size), withTimeout: -1, tag: 1)

        let finished: ([SocketRecord]) -> Bool = { records in
            records.contains { if case .read = $0.event { return true } else { return false } }
        }
        delegate.wait("the client's 32 MiB", timeout: 60, until: finished)
        serverDelegate.wait("the server's 32 MiB", timeout: 60, until: finished)
        // Compared outside XCTAssertEqual, which would print 32 MiB on a failure.
        XCTAssertTrue(delegate.readBytes(tag: 1) == fromServer, "the client's 32 MiB differ")
        let accepted = try XCTUnwrap(serverDelegate.accepted.first)
        XCTAssertTrue(serverDelegate.readBytes(tag: 1, of: accepted) == fromClient, "the server's 32 MiB differ")
        XCTAssertEqual(client.tlsInfo?.version, .v1_3)
    }

    /// Writes and reads queued on both sides before the handshake (the client's before it has even
    /// connected) wait for it and then go over TLS, after socketDidSecure.
    func testWritesQueuedBeforeTheHandshakeAreSentAfterItOverTLS() throws {
        let serverDelegate = makeDelegate("server")
        let serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverDelegate.configure { hooks in
            hooks.accept = { _, child in
                child.startTLS(serverTLS)
                child.write(Data("welcome".utf8), withTimeout: testTimeout, tag: 1)
                child.readData(toLength: 5, withTimeout: testTimeout, tag: 1)
            }
        }
        let server = try makeServer(serverDelegate)
        let delegate = makeDelegate("client")
        let client = try connectTLSClient(delegate, port: server.localPort, Self.client())
        client.write(Data("early".utf8), withTimeout: testTimeout, tag: 1)
        client.readData(toLength: 7, withTimeout: testTimeout, tag: 1)

        XCTAssertEqual(delegate.waitForReadBytes(7, tag: 1), Data("welcome".utf8))
        XCTAssertEqual(serverDelegate.waitForReadBytes(5, tag: 1), Data("early".utf8))
        let accepted = try XCTUnwrap(serverDelegate.accepted.first)
        for (delegate, sock) in [(delegate, client), (serverDelegate, accepted)] {
            let events = delegate.events(of: sock)
            let secured = events.firstIndex { if case .secured = $0 { return true } else { return false } }
            let read = events.firstIndex { if case .read = $0 { return true } else { return false } }
            let wrote = events.firstIndex { if case .wrote = $0 { return true } else { return false } }
            XCTAssertNotNil(secured, "\(delegate.name): \(events)")
            XCTAssertLessThan(secured ?? .max, read ?? -1, "\(delegate.name): \(events)")
            XCTAssertLessThan(secured ?? .max, wrote ?? -1, "\(delegate.name): \(events)")
        }
    }

    /// STARTTLS as a protocol does it: a plaintext exchange, then `startTLS` with a write and a read queued behind
    /// it on each side. What was queued before `startTLS` goes in plaintext, what after in TLS.
    func testPlaintextThenStartTLSWithIOQueuedBehindIt() throws {
        let serverDelegate = makeDelegate("server")
        let serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverDelegate.configure { hooks in
            hooks.accept = { _, child in child.readData(to: Data("\r\n".utf8), withTimeout: testTimeout, tag: 1) }
            hooks.read = { sock, _, tag in
                guard tag == 1 else { return }
                sock.write(Data("GO AHEAD\r\n".utf8), withTimeout: testTimeout, tag: 1)
                sock.startTLS(serverTLS)
                sock.write(Data("secret reply".utf8), withTimeout: testTimeout, tag: 2)
                sock.readData(toLength: 14, withTimeout: testTimeout, tag: 2)
            }
        }
        let server = try makeServer(serverDelegate)
        let delegate = makeDelegate("client")
        let client = makeSocket(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        client.write(Data("STARTTLS\r\n".utf8), withTimeout: testTimeout, tag: 1)
        client.readData(to: Data("\r\n".utf8), withTimeout: testTimeout, tag: 1)
        client.startTLS(Self.client())
        client.write(Data("secret request".utf8), withTimeout: testTimeout, tag: 2)
        client.readData(toLength: 12, withTimeout: testTimeout, tag: 2)

        XCTAssertEqual(delegate.waitForReadBytes(12, tag: 2), Data("secret reply".utf8))
        XCTAssertEqual(serverDelegate.waitForReadBytes(14, tag: 2), Data("secret request".utf8))
        XCTAssertEqual(delegate.readBytes(tag: 1), Data("GO AHEAD\r\n".utf8))
        XCTAssertEqual(serverDelegate.readBytes(tag: 1), Data("STARTTLS\r\n".utf8))
        XCTAssertEqual(client.tlsInfo?.version, .v1_3)
    }
}
