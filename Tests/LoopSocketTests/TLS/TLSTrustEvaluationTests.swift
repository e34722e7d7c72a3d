import COpenSSL
import Foundation
import SharedTestSupport
import XCTest

@testable import LoopSocket

/// `TLSTrust.evaluate()` checks what the handshake's automatic verification checks: a server's certificate
/// for TLS server use and its name, wildcards only as a whole label; a client's certificate, on a server,
/// for TLS client use.
final class TLSTrustEvaluationTests: TLSTestCase {
    private static func pem(_ name: String) throws -> [TLSCertificate] {
        try TLSCertificate.certificates(pemFile: TestCertificates.path(name))
    }

    /// A client's context trusting the test CA, with manual trust, as a client's delegate sees it.
    private func clientContext() throws -> TLSContext {
        try TLSContext(configuration: Self.client { $0.manualTrustEvaluation = true })
    }

    /// A server's context asking clients for certificates, trusting the test CA, with manual trust.
    private func serverContext() throws -> TLSContext {
        var configuration = try Self.serverDecidingOnClientCertificates()
        configuration.trustRoots = .certificates(Self.testCA)
        return try TLSContext(configuration: configuration)
    }

    /// A client certificate (extendedKeyUsage clientAuth) is what a server's delegate trusts.
    func testServerTrustsAClientCertificate() throws {
        let trust = TLSTrust(certificates: try Self.pem("client.pem"), hostName: nil, context: try serverContext())
        XCTAssertNil(trust.evaluate())
        XCTAssertTrue(trust.isTrusted)
    }

    /// A server-only certificate (serverAuth; any public one under the system roots is such) is no client's.
    func testServerRefusesAServerCertificateAsAClients() throws {
        let trust = TLSTrust(certificates: try Self.pem("server.pem"), hostName: nil, context: try serverContext())
        let error = try XCTUnwrap(trust.evaluate(), "a server certificate was trusted as a client's")
        XCTAssertEqual(error.code, .certificateVerificationFailed)
        XCTAssertEqual(error.verificationResult, Int(X509_V_ERR_INVALID_PURPOSE), "\(error)")
    }

    /// On a client, the other way round: a server certificate is trusted, a client certificate is not.
    func testClientTrustsOnlyAServerCertificate() throws {
        let context = try clientContext()
        XCTAssertNil(TLSTrust(certificates: try Self.pem("server.pem"), hostName: "localhost", context: context).evaluate())
        let error = TLSTrust(certificates: try Self.pem("client.pem"), hostName: nil, context: context).evaluate()
        XCTAssertEqual(error?.verificationResult, Int(X509_V_ERR_INVALID_PURPOSE), "\(String(describing: error))")
    }

    /// `f*.wild.test` names no host: the handshake refuses it, and so does the delegate's evaluation.
    func testPartialWildcardIsRefused() throws {
        let ca = try makeThrowawayCA(serverNames: "DNS:f*.wild.test")
        let trust = TLSTrust(certificates: ca.serverIdentity.certificates, hostName: "foo.wild.test", context: try clientContext())
        trust.setAnchorCertificates([ca.certificate])
        let error = try XCTUnwrap(trust.evaluate(), "f*.wild.test matched foo.wild.test")
        XCTAssertEqual(error.verificationResult, Int(X509_V_ERR_HOSTNAME_MISMATCH), "\(error)")
        // The same chain for a name it does hold is trusted: only the name was refused.
        let exact = try makeThrowawayCA(serverNames: "DNS:foo.wild.test")
        let control = TLSTrust(certificates: exact.serverIdentity.certificates, hostName: "foo.wild.test", context: try clientContext())
        control.setAnchorCertificates([exact.certificate])
        XCTAssertNil(control.evaluate())
    }

    /// A whole-label wildcard (`*.wild.test`) matches one label, as in the handshake.
    func testWholeLabelWildcardMatchesOneLabel() throws {
        let chain = try Self.pem("other-chain.pem")
        let context = try clientContext()
        XCTAssertNil(TLSTrust(certificates: chain, hostName: "foo.wild.test", context: context).evaluate())
        let deeper = TLSTrust(certificates: chain, hostName: "a.foo.wild.test", context: context).evaluate()
        XCTAssertEqual(deeper?.verificationResult, Int(X509_V_ERR_HOSTNAME_MISMATCH), "\(String(describing: deeper))")
    }
}
