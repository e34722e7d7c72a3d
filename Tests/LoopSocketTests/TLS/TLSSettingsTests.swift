import Foundation
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// GCDAsyncSocket's settings dictionary mapped onto TLSConfiguration, and the legacy keys it rejects.
final class TLSSettingsTests: TLSTestCase {
    func testKeysMapOntoTheTypedConfiguration() throws {
        let identity = try Self.identity()
        let extra = try XCTUnwrap(Self.testCA.first)
        let configuration = try TLSConfiguration(gcdAsyncSocketSettings: [
            kCFStreamSSLIsServer: true,
            kCFStreamSSLCertificates: [identity, extra],
            GCDAsyncSocketSSLProtocolVersionMin: 8,  // kTLSProtocol12
            GCDAsyncSocketSSLProtocolVersionMax: 10,  // kTLSProtocol13
            GCDAsyncSocketSSLALPN: ["h2", "http/1.1"],
            GCDAsyncSocketManuallyEvaluateTrust: 1,
        ])
        XCTAssertEqual(configuration.role, .server)
        XCTAssertTrue(configuration.identity === identity)
        XCTAssertEqual(configuration.extraChainCertificates.count, 1)
        XCTAssertEqual(configuration.minimumVersion, .v1_2)
        XCTAssertEqual(configuration.maximumVersion, .v1_3)
        XCTAssertEqual(configuration.alpn, ["h2", "http/1.1"])
        XCTAssertTrue(configuration.manualTrustEvaluation)

        let client = try TLSConfiguration(gcdAsyncSocketSettings: [
            kCFStreamSSLPeerName: "example.test", GCDAsyncSocketSSLPeerID: Data("session-1".utf8),
        ])
        XCTAssertEqual(client.role, .client)
        XCTAssertEqual(client.serverName, "example.test")
        XCTAssertEqual(client.sessionKey, Data("session-1".utf8))
        XCTAssertEqual(client.certificateVerification, .fullVerification, "secure by default")
    }

    /// Resumption: servers by default, clients only when asked; `LoopSocketTLSTrustRoots` in its three forms.
    func testResumptionAndTrustRootsKeys() throws {
        XCTAssertTrue(try TLSConfiguration(gcdAsyncSocketSettings: [kCFStreamSSLIsServer: true]).sessionResumption)
        XCTAssertFalse(try TLSConfiguration(gcdAsyncSocketSettings: [kCFStreamSSLIsServer: true,
                                                                     LoopSocketTLSSessionResumption: false]).sessionResumption)
        let plain = try TLSConfiguration(gcdAsyncSocketSettings: [:])
        XCTAssertFalse(plain.resumesSessions, "clients resume only when asked")
        XCTAssertEqual(plain.trustRoots, .system)
        XCTAssertTrue(try TLSConfiguration(gcdAsyncSocketSettings: [GCDAsyncSocketSSLPeerID: Data("p".utf8)]).resumesSessions)
        XCTAssertTrue(try TLSConfiguration(gcdAsyncSocketSettings: [LoopSocketTLSSessionResumption: true]).resumesSessions)

        let ca = Self.testCA
        XCTAssertEqual(try TLSConfiguration(gcdAsyncSocketSettings: [LoopSocketTLSTrustRoots: ca]).trustRoots, .certificates(ca))
        XCTAssertEqual(try TLSConfiguration(gcdAsyncSocketSettings: [LoopSocketTLSTrustRoots: ca as [Any]]).trustRoots,
                       .certificates(ca))
        XCTAssertEqual(try TLSConfiguration(gcdAsyncSocketSettings: [LoopSocketTLSTrustRoots: "/ca.pem"]).trustRoots, .file("/ca.pem"))
        let typed = TLSConfiguration.TrustRoots.system
        XCTAssertEqual(try TLSConfiguration(gcdAsyncSocketSettings: [LoopSocketTLSTrustRoots: typed]).trustRoots, .system)
        for wrong: Any in [42, ["not a certificate"]] {
            XCTAssertThrowsError(try TLSConfiguration(gcdAsyncSocketSettings: [LoopSocketTLSTrustRoots: wrong])) {
                XCTAssertEqual($0.tlsError?.code, .badConfiguration)
            }
        }
    }

    func testCipherSuitesByIANANumber() throws {
        // TLS_AES_128_GCM_SHA256 and TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256.
        let both = try TLSConfiguration(gcdAsyncSocketSettings: [GCDAsyncSocketSSLCipherSuites: [0x1301, 0xC02F]])
        XCTAssertEqual(both.cipherSuites, "TLS_AES_128_GCM_SHA256")
        XCTAssertEqual(both.cipherList, "ECDHE-RSA-AES128-GCM-SHA256")
        // Only TLS 1.3 suites listed: TLS 1.2 is not offered at all, as with SecureTransport.
        let only13 = try TLSConfiguration(gcdAsyncSocketSettings: [GCDAsyncSocketSSLCipherSuites: [0x1302]])
        XCTAssertEqual(only13.minimumVersion, .v1_3)
        XCTAssertThrowsError(try TLSConfiguration(gcdAsyncSocketSettings: [GCDAsyncSocketSSLCipherSuites: [0x0000]])) {
            XCTAssertEqual($0.tlsError?.code, .badConfiguration)
        }
    }

    func testLegacyKeysAreRejectedWithGCDAsyncSocketsMessages() {
        for key in [kCFStreamSSLAllowsAnyRoot, kCFStreamSSLAllowsExpiredRoots, kCFStreamSSLAllowsExpiredCertificates,
                    kCFStreamSSLValidatesCertificateChain] {
            XCTAssertThrowsError(try TLSConfiguration(gcdAsyncSocketSettings: [key: true])) { error in
                XCTAssertEqual(error.tlsError?.code, .badConfiguration)
                XCTAssertEqual(error.tlsError?.reason, "Security option unavailable - \(key) - You must use manual trust evaluation")
            }
        }
        XCTAssertThrowsError(try TLSConfiguration(gcdAsyncSocketSettings: [kCFStreamSSLLevel: "kCFStreamSocketSecurityLevelTLSv1"])) {
            XCTAssertTrue($0.tlsError?.reason.contains("GCDAsyncSocketSSLProtocolVersionMin") == true)
        }
    }

    func testOldVersionsAndWrongTypesAreRefused() {
        for version in [2, 4, 7, 0x0301, 0x0302] {  // SSL 3, TLS 1.0, TLS 1.1 in SSLProtocol and wire numbers
            XCTAssertThrowsError(try TLSConfiguration(gcdAsyncSocketSettings: [GCDAsyncSocketSSLProtocolVersionMin: version]))
        }
        XCTAssertThrowsError(try TLSConfiguration(gcdAsyncSocketSettings: [kCFStreamSSLPeerName: 42]))
        XCTAssertThrowsError(try TLSConfiguration(gcdAsyncSocketSettings: [kCFStreamSSLCertificates: ["not an identity"]])) {
            XCTAssertTrue($0.tlsError?.reason.contains("TLSIdentity") == true)
        }
    }

    /// A bad dictionary closes the socket with the error when the handshake would start, as GCDAsyncSocket
    /// does, and the error bridges to NSError.
    func testStartTLSWithALegacyKeyClosesTheSocket() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        client.startTLS([kCFStreamSSLAllowsAnyRoot: true])
        let error = try XCTUnwrap(clientDelegate.waitForDisconnect(of: client))
        XCTAssertEqual(error.tlsError?.code, .badConfiguration)
        XCTAssertTrue((error as NSError).localizedDescription.contains("kCFStreamSSLAllowsAnyRoot"), "\(error as NSError)")
    }

    /// The Linux stand-in for a SecIdentity in kCFStreamSSLCertificates works end to end.
    func testServerFromTheSettingsDictionary() throws {
        let identity = try Self.identity()
        let serverDelegate = makeDelegate("server")
        serverDelegate.configure { hooks in
            hooks.accept = { _, child in
                child.startTLS([kCFStreamSSLIsServer: true, kCFStreamSSLCertificates: [identity]])
                child.readData(withTimeout: -1, tag: 0)
            }
            hooks.read = { sock, data, _ in sock.write(data, withTimeout: -1, tag: 0) }
        }
        let server = try makeServer(serverDelegate)
        let clientDelegate = makeDelegate("client")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client())
        client.write(Data("dict".utf8), withTimeout: testTimeout, tag: 0)
        client.readData(toLength: 4, withTimeout: testTimeout, tag: 0)
        XCTAssertEqual(clientDelegate.waitForReadBytes(4), Data("dict".utf8))
    }
}
