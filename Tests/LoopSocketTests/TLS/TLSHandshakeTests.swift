import COpenSSL
import Foundation
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Our client against our server: versions, verification failures, the handshake's edge cases.
final class TLSHandshakeTests: TLSTestCase {
    func testEchoOverTLS13WithALPNAndInfo() throws {
        let serverDelegate = makeDelegate("server")
        var serverTLS = TLSConfiguration.server(identity: try Self.identity(), alpn: ["h2", "http/1.1"])
        serverTLS.sessionResumption = true
        let server = try makeTLSEchoServer(serverDelegate, serverTLS)
        let clientDelegate = makeDelegate("client")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client { $0.alpn = ["http/1.1"]; $0.serverName = "localhost" })
        waitForSecure(clientDelegate, client)
        XCTAssertTrue(client.isSecure)
        let info = try XCTUnwrap(client.tlsInfo)
        XCTAssertEqual(info.version, .v1_3)
        XCTAssertEqual(info.alpn, "http/1.1")
        XCTAssertEqual(info.peerCertificates.first?.subject.contains("CN=localhost"), true)
        let accepted = serverDelegate.waitForAccepts().first!
        waitForSecure(serverDelegate, accepted)
        XCTAssertEqual(accepted.tlsInfo?.serverName, "localhost")
        XCTAssertEqual(accepted.tlsInfo?.alpn, "http/1.1")

        // 1 byte, then 3 MiB: records are at most 16 KiB, so reads and writes cross record boundaries.
        client.write(Data([42]), withTimeout: -1, tag: 1)
        client.readData(toLength: 1, withTimeout: testTimeout, tag: 1)
        XCTAssertEqual(clientDelegate.waitForReadBytes(1, tag: 1), Data([42]))
        let big = patternData(3 << 20)
        client.write(big, withTimeout: -1, tag: 2)
        client.readData(toLength: UInt(big.count), withTimeout: testTimeout, tag: 2)
        XCTAssertEqual(clientDelegate.waitForReadBytes(big.count, tag: 2), big)
        client.disconnect()
        // Our close sent close_notify: the server sees a clean end of stream, not a cut.
        let serverError = serverDelegate.waitForDisconnect(of: accepted)
        XCTAssertEqual(serverError?.socketError?.code, .closedError, "\(String(describing: serverError))")
    }

    func testTLS12WhenTheClientCapsTheVersion() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let clientDelegate = makeDelegate("client")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client { $0.maximumVersion = .v1_2 })
        waitForSecure(clientDelegate, client)
        XCTAssertEqual(client.tlsInfo?.version, .v1_2)
        client.write(Data("twelve".utf8), withTimeout: -1, tag: 0)
        client.readData(toLength: 6, withTimeout: testTimeout, tag: 0)
        XCTAssertEqual(clientDelegate.waitForReadBytes(6), Data("twelve".utf8))
    }

    /// Connects a client with `clientTLS` to a server presenting `certificate`, and returns the client's error.
    private func clientFailure(
        certificate: String = "server.pem", key: String = "server.key", host: String = "127.0.0.1",
        interface: String = "127.0.0.1", _ clientTLS: TLSConfiguration, file: StaticString = #filePath, line: UInt = #line
    ) throws -> TLSError? {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(
            serverDelegate, interface: interface, .server(identity: try Self.identity(certificate, key: key)))
        let clientDelegate = makeDelegate("client")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, host: host, clientTLS)
        let error = clientDelegate.waitForDisconnect(of: client, file: file, line: line)
        XCTAssertFalse(clientDelegate.events.contains { if case .secured = $0 { return true }; return false }, file: file, line: line)
        // The server learns of it too, and closes its side.
        if let accepted = serverDelegate.waitForAccepts(file: file, line: line).first {
            serverDelegate.waitForDisconnect(of: accepted, file: file, line: line)
        }
        return error?.tlsError
    }

    func testWrongHostNameFails() throws {
        let error = try XCTUnwrap(try clientFailure(Self.client { $0.serverName = "wrong.test" }))
        XCTAssertEqual(error.code, .certificateVerificationFailed)
        XCTAssertEqual(error.verificationFailure, "hostname mismatch")
        let bridged = error as NSError
        XCTAssertEqual(bridged.domain, "kCFStreamErrorDomainSSL")
        XCTAssertEqual(bridged.code, -9843)  // errSSLHostNameMismatch
    }

    func testTheHostConnectedToIsVerifiedByDefault() throws {
        // The certificate names localhost and 127.0.0.1, not 127.0.0.2.
        let error = try XCTUnwrap(try clientFailure(host: "127.0.0.2", interface: "127.0.0.2", Self.client()))
        XCTAssertEqual(error.code, .certificateVerificationFailed)
        XCTAssertEqual(error.verificationFailure, "IP address mismatch")
    }

    func testUnknownCAFails() throws {
        let error = try XCTUnwrap(try clientFailure(certificate: "untrusted.pem", key: "untrusted.key", Self.client()))
        XCTAssertEqual(error.code, .certificateVerificationFailed)
        XCTAssertEqual((error as NSError).code, -9812)  // errSSLUnknownRootCert
    }

    func testExpiredCertificateFails() throws {
        let error = try XCTUnwrap(try clientFailure(certificate: "expired.pem", key: "expired.key", Self.client()))
        XCTAssertEqual(error.verificationFailure, "certificate has expired")
        XCTAssertEqual((error as NSError).code, -9814)  // errSSLCertExpired
        XCTAssertTrue(error.localizedDescription.contains("certificate has expired"))
    }

    func testSystemTrustStoreIsTheDefault() throws {
        // startTLS(nil): the secure defaults; the test CA is in no system store.
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let clientDelegate = makeDelegate("client")
        clientDelegate.configure { hooks in hooks.connect = { sock in sock.startTLS(nil) } }
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "localhost", onPort: server.localPort, withTimeout: testTimeout)
        let error = clientDelegate.waitForDisconnect(of: client)?.tlsError
        XCTAssertEqual(error?.code, .certificateVerificationFailed)
    }

    func testRequiredClientCertificate() throws {
        var serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverTLS.clientAuthentication = .required
        serverTLS.trustRoots = .certificates(Self.testCA)
        // Without one: both sides fail.
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, serverTLS)
        let clientDelegate = makeDelegate("client")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client())
        // In TLS 1.3 the client finishes first and learns of the refusal when it reads.
        client.readData(withTimeout: testTimeout, tag: 0)
        XCTAssertNotNil(clientDelegate.waitForDisconnect(of: client)?.tlsError)
        let refused = try XCTUnwrap(serverDelegate.waitForAccepts().first)
        let serverError = serverDelegate.waitForDisconnect(of: refused)?.tlsError
        XCTAssertEqual(serverError?.code, .handshakeFailed, "\(String(describing: serverError))")
        XCTAssertTrue(serverError?.reason.contains("certificate") == true, "\(String(describing: serverError))")

        // With one: the server sees it.
        let secondDelegate = makeDelegate("client 2")
        let identity = try Self.identity("client.pem", key: "client.key")
        let second = try connectTLSClient(secondDelegate, port: server.localPort, Self.client { $0.identity = identity })
        waitForSecure(secondDelegate, second)
        second.write(Data("hi".utf8), withTimeout: -1, tag: 0)
        second.readData(toLength: 2, withTimeout: testTimeout, tag: 0)
        XCTAssertEqual(secondDelegate.waitForReadBytes(2), Data("hi".utf8))
        let accepted = serverDelegate.waitForAccepts(2)[1]
        XCTAssertEqual(accepted.tlsInfo?.peerCertificates.first?.subject.contains("CN=test client"), true)
    }

    func testPlaintextInsteadOfClientHelloFailsTheHandshake() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let (raw, accepted) = try rawClient(to: server, delegate: serverDelegate)
        defer { raw.close() }
        try raw.send(Data("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        let error = serverDelegate.waitForDisconnect(of: accepted)?.tlsError
        XCTAssertEqual(error?.code, .handshakeFailed)
        XCTAssertEqual((error as NSError?)?.domain, "kCFStreamErrorDomainSSL")
    }

    func testStalledHandshakeTimesOutWhileOthersAreServed() throws {
        var serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverTLS.handshakeTimeout = .milliseconds(300)
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, serverTLS)
        // A peer that sends half a ClientHello and stalls.
        let (raw, stalled) = try rawClient(to: server, delegate: serverDelegate)
        defer { raw.close() }
        try raw.send(Data([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]))
        // Another client completes its handshake and an echo meanwhile on the same loop.
        let clientDelegate = makeDelegate("client")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client())
        client.write(Data("ok".utf8), withTimeout: -1, tag: 0)
        client.readData(toLength: 2, withTimeout: testTimeout, tag: 0)
        XCTAssertEqual(clientDelegate.waitForReadBytes(2), Data("ok".utf8))
        XCTAssertFalse(serverDelegate.events(of: stalled).contains { $0.isDisconnect }, "the stalled peer's timer ran early")
        let error = serverDelegate.waitForDisconnect(of: stalled)?.tlsError
        XCTAssertEqual(error?.code, .handshakeTimeout)
    }

    func testResetMidHandshake() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let (raw, accepted) = try rawClient(to: server, delegate: serverDelegate)
        try raw.send(Data([0x16, 0x03, 0x01, 0x02, 0x00]))
        raw.resetClose()
        let error = serverDelegate.waitForDisconnect(of: accepted)
        XCTAssertNotNil(error)
        XCTAssertFalse(accepted.isSecure)
    }

    func testPeerClosingMidHandshake() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let (raw, accepted) = try rawClient(to: server, delegate: serverDelegate)
        try raw.send(Data([0x16, 0x03, 0x01, 0x02, 0x00]))
        raw.close()
        XCTAssertEqual(serverDelegate.waitForDisconnect(of: accepted)?.tlsError?.code, .closedDuringHandshake)
    }

    func testServerNameIndicationPicksTheIdentityAndSendsItsChain() throws {
        var serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverTLS.serverNameIdentities = ["other.test": try Self.identity("other-chain.pem", key: "other.key")]
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, serverTLS)
        // other.test's leaf is signed by an intermediate the client does not have: the server sends it.
        let clientDelegate = makeDelegate("client")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client { $0.serverName = "other.test" })
        waitForSecure(clientDelegate, client)
        XCTAssertEqual(client.tlsInfo?.peerCertificates.first?.subject.contains("CN=other.test"), true)
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts().first)
        waitForSecure(serverDelegate, accepted)  // in TLS 1.3 the client finishes first
        XCTAssertEqual(accepted.tlsInfo?.serverName, "other.test")
        // An unknown name gets the default identity (and fails verification against that name).
        let otherDelegate = makeDelegate("client 2")
        let other = try connectTLSClient(otherDelegate, port: server.localPort, Self.client { $0.serverName = "unknown.test" })
        XCTAssertEqual(otherDelegate.waitForDisconnect(of: other)?.tlsError?.verificationFailure, "hostname mismatch")
    }

    /// A client resumes its session on its next connection, in TLS 1.3 and in TLS 1.2, by the server's
    /// stateless tickets: the server itself stores no session (its memory does not grow with its clients).
    func testSessionResumptionByTicketsStoresNothingOnTheServer() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        for (index, version) in [TLSVersion.v1_3, .v1_2].enumerated() {
            let clientTLS = Self.client {
                $0.maximumVersion = version
                $0.sessionResumption = true
            }
            for round in 0..<2 {
                let (client, delegate) = try connectWithOneRoundTrip("client \(version) \(round)", port: server.localPort, clientTLS)
                XCTAssertEqual(client.tlsInfo?.sessionResumed, round == 1, "\(version) round \(round)")
                let accepted = serverDelegate.waitForAccepts(index * 2 + round + 1).last
                let stored = try onLoop(server.eventLoop) { () -> Int? in
                    guard let tls = accepted?.tlsLayer else { return nil }
                    return lsock_ctx_session_count(SSL_get_SSL_CTX(tls.ssl))
                }
                XCTAssertEqual(stored, 0, "sessions stored by the server")
                client.disconnect()
                delegate.waitForDisconnect(of: client)
            }
        }
    }

    /// `sessionTickets` is the number of TLS 1.3 tickets a handshake issues: with none, a client has nothing to
    /// resume with; a negative number is refused when the context is built.
    func testSessionTicketsSetting() throws {
        var invalid = TLSConfiguration.server(identity: try Self.identity())
        invalid.sessionTickets = -1
        XCTAssertThrowsError(try invalid.validate()) { XCTAssertEqual(($0 as? TLSError)?.code, .badConfiguration) }
        var serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverTLS.sessionTickets = 0
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, serverTLS)
        let clientTLS = Self.client {
            $0.maximumVersion = .v1_3
            $0.sessionResumption = true  // asked for, but nothing to resume with
        }
        for round in 0..<2 {
            let (client, delegate) = try connectWithOneRoundTrip("client \(round)", port: server.localPort, clientTLS)
            XCTAssertEqual(client.tlsInfo?.sessionResumed, false, "round \(round)")
            client.disconnect()
            delegate.waitForDisconnect(of: client)
        }
    }

    func testPKCS12Identity() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestCertificates.path("server.p12")))
        XCTAssertThrowsError(try TLSIdentity(pkcs12: data, password: "wrong")) { error in
            XCTAssertEqual((error as? TLSError)?.code, .wrongPassword, "\(error)")
        }
        let identity = try TLSIdentity(pkcs12: data, password: "test-password")
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: identity))
        let clientDelegate = makeDelegate("client")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client())
        waitForSecure(clientDelegate, client)
    }

    func testMismatchedKeyIsAConfigurationError() {
        XCTAssertThrowsError(try Self.identity("server.pem", key: "client.key")) { error in
            XCTAssertEqual(error.tlsError?.code, .badConfiguration)
        }
    }
}
