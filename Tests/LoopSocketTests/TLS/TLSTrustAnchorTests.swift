import Foundation
import SharedTestSupport
import Synchronization
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Trusting an app's own CA from the trust callback (`SecTrustSetAnchorCertificates`): the chain is trusted
/// through the anchors alone, refused without them, and refused for another host name.
final class TLSTrustAnchorTests: TLSTestCase {
    /// A manual-trust client to `port` verifying `peerName`, whose delegate answers `decide(trust)`.
    private func manualClient(
        _ name: String, port: UInt16, peerName: String = "localhost", decide: @escaping @Sendable (TLSTrust) -> Bool
    ) throws -> (GCDAsyncSocket, RecordingDelegate) {
        let delegate = makeDelegate(name)
        delegate.configure { hooks in hooks.trust = { _, trust, handler in handler(decide(trust)) } }
        let client = makeSocket(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: port, withTimeout: testTimeout)
        client.startTLS([GCDAsyncSocketManuallyEvaluateTrust: true, kCFStreamSSLPeerName: peerName])
        return (client, delegate)
    }

    private func caServer() throws -> (ThrowawayCA, GCDAsyncSocket) {
        let ca = try makeThrowawayCA()
        return (ca, try makeTLSEchoServer(makeDelegate("server"), .server(identity: ca.serverIdentity)))
    }

    /// The evaluation the trust callback made, kept for the test.
    final class Evaluations: Sendable {
        private let errors = Mutex<[TLSError?]>([])
        func record(_ error: TLSError?) { errors.withLock { $0.append(error) } }
        var all: [TLSError?] { errors.withLock { $0 } }
    }

    /// CocoaMQTT's trusted server certificates, as an Apple app writes them in the callback.
    func testCASignedServerIsTrustedThroughAnchorsSetInTheCallback() throws {
        let (ca, server) = try caServer()
        let anchor = try XCTUnwrap(SecCertificateCreateWithData(nil, SecCertificateCopyData(ca.certificate)))
        let (client, delegate) = try manualClient("anchored", port: server.localPort) { trust in
            SecTrustSetAnchorCertificates(trust, [anchor])
            SecTrustSetAnchorCertificatesOnly(trust, true)
            var error: TLSError?
            return SecTrustEvaluateWithError(trust, &error) && error == nil
        }
        waitForSecure(delegate, client)
        client.write(Data("ping".utf8), withTimeout: testTimeout, tag: 0)
        client.readData(toLength: 4, withTimeout: testTimeout, tag: 0)
        XCTAssertEqual(delegate.waitForReadBytes(4), Data("ping".utf8))
    }

    func testCASignedServerIsRefusedWithoutTheAnchors() throws {
        let (_, server) = try caServer()
        let evaluations = Evaluations()
        let (client, delegate) = try manualClient("no anchors", port: server.localPort) { trust in
            var error: TLSError?
            let trusted = SecTrustEvaluateWithError(trust, &error)
            evaluations.record(error)
            return trusted
        }
        XCTAssertEqual(delegate.waitForDisconnect(of: client)?.tlsError?.code, .trustRejected)
        XCTAssertEqual(evaluations.all.count, 1)
        XCTAssertEqual(evaluations.all.first??.code, .certificateVerificationFailed)
        XCTAssertEqual(evaluations.all.first??.verificationFailure, "unable to get local issuer certificate")
    }

    func testAnchoredChainIsRefusedForAnotherHost() throws {
        let (ca, server) = try caServer()
        let evaluations = Evaluations()
        let (client, delegate) = try manualClient("wrong host", port: server.localPort, peerName: "wrong.test") { trust in
            trust.setAnchorCertificates([ca.certificate])
            let error = trust.evaluate()
            evaluations.record(error)
            return error == nil
        }
        XCTAssertEqual(delegate.waitForDisconnect(of: client)?.tlsError?.code, .trustRejected)
        XCTAssertEqual(evaluations.all.first??.verificationFailure, "hostname mismatch")
    }

    /// One chain evaluated against several anchor settings: only anchors that lead to its root trust it.
    func testAnchorSettings() throws {
        let (ca, server) = try caServer()
        let held = Mutex<TLSTrust?>(nil)
        let (client, delegate) = try manualClient("held", port: server.localPort) { trust in
            held.withLock { $0 = trust }
            return false
        }
        delegate.waitForDisconnect(of: client)
        let trust = try XCTUnwrap(held.withLock { $0 })
        XCTAssertNil(trust.anchorCertificates)
        XCTAssertNotNil(trust.evaluate(), "the system's store does not hold the throwaway CA")
        trust.anchorCertificates = [ca.certificate]
        XCTAssertNil(trust.evaluate(), "the CA as the only anchor")
        trust.anchorCertificatesOnly = false
        XCTAssertNil(trust.evaluate(), "the CA beside the system's store")
        trust.setAnchorCertificates(Self.testCA)
        XCTAssertNotNil(trust.evaluate(), "another CA")
        trust.setAnchorCertificates([], only: false)
        XCTAssertNotNil(trust.evaluate(), "no anchor beside the system's store")
        trust.setAnchorCertificates([])
        XCTAssertNotNil(trust.evaluate(), "no anchor at all")
        XCTAssertNil(SecCertificateCreateWithData(nil, Data([0x30, 0x03, 0x02, 0x01, 0x01])), "not a certificate")
    }

    /// `LoopSocketTLSTrustRoots` in the settings dictionary: automatic verification against the CA, and
    /// with manual trust the roots `evaluate()` uses.
    func testTrustRootsSettingsKey() throws {
        let (ca, server) = try caServer()
        let delegate = makeDelegate("automatic")
        let client = makeSocket(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        client.startTLS([kCFStreamSSLPeerName: "localhost", LoopSocketTLSTrustRoots: [ca.certificate]])
        waitForSecure(delegate, client)

        let manualDelegate = makeDelegate("manual")
        manualDelegate.configure { hooks in hooks.trust = { _, trust, handler in handler(trust.evaluate() == nil) } }
        let manual = makeSocket(manualDelegate)
        try manual.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        manual.startTLS([GCDAsyncSocketManuallyEvaluateTrust: true, kCFStreamSSLPeerName: "localhost",
                         LoopSocketTLSTrustRoots: [ca.certificate]])
        waitForSecure(manualDelegate, manual)
    }
}
