import Foundation
import SharedTestSupport
import Synchronization
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// A server with manual trust asks clients for a certificate only as `clientAuthentication` says, demands one
/// with `.required` before its delegate is asked, and its delegate's `evaluate()` checks a client
/// certificate as one.
final class TLSManualClientAuthenticationTests: TLSTestCase {
    /// The chains the server's delegate was asked about (subjects, leaf first).
    final class Questions: Sendable {
        private let chains = Mutex<[[String]]>([])
        func record(_ trust: TLSTrust) { chains.withLock { $0.append(trust.certificates.map(\.subject)) } }
        var all: [[String]] { chains.withLock { $0 } }
    }

    /// An echo server with manual trust trusting the test CA, whose delegate records its question and
    /// answers `decide`.
    private func server(
        _ authentication: TLSConfiguration.ClientAuthentication, _ delegate: RecordingDelegate, _ questions: Questions,
        decide: @escaping @Sendable (TLSTrust) -> Bool
    ) throws -> GCDAsyncSocket {
        var configuration = TLSConfiguration.server(identity: try Self.identity())
        configuration.manualTrustEvaluation = true
        configuration.clientAuthentication = authentication
        configuration.trustRoots = .certificates(Self.testCA)
        let server = try makeTLSEchoServer(delegate, configuration)
        delegate.configure { hooks in
            hooks.trust = { _, trust, handler in
                questions.record(trust)
                handler(decide(trust))
            }
        }
        return server
    }

    /// A client presenting `certificate` (none when nil) that sends "hi" and reads the echo.
    private func client(_ name: String, port: UInt16, certificate: String?) throws -> (GCDAsyncSocket, RecordingDelegate) {
        let delegate = makeDelegate(name)
        let identity = try certificate.map { try Self.identity("\($0).pem", key: "\($0).key") }
        let client = try connectTLSClient(delegate, port: port, Self.client { $0.identity = identity })
        client.write(Data("hi".utf8), withTimeout: testTimeout, tag: 0)
        client.readData(toLength: 2, withTimeout: testTimeout, tag: 0)
        return (client, delegate)
    }

    /// The accepted socket's end: the error it closed with.
    private func serverSideError(_ delegate: RecordingDelegate) throws -> TLSError? {
        let accepted = try XCTUnwrap(delegate.waitForAccepts().first)
        return delegate.waitForDisconnect(of: accepted)?.tlsError
    }

    func testRequiredRefusesAClientWithoutACertificateBeforeAskingTheDelegate() throws {
        let serverDelegate = makeDelegate("server")
        let questions = Questions()
        let server = try server(.required, serverDelegate, questions) { _ in true }
        let (client, clientDelegate) = try client("no certificate", port: server.localPort, certificate: nil)
        XCTAssertNotNil(clientDelegate.waitForDisconnect(of: client)?.tlsError)
        let error = try serverSideError(serverDelegate)
        XCTAssertEqual(error?.code, .handshakeFailed, "\(String(describing: error))")
        XCTAssertEqual(questions.all, [], "the delegate was asked about a client without a certificate")
    }

    func testNoneDoesNotAskClientsForACertificate() throws {
        let serverDelegate = makeDelegate("server")
        let questions = Questions()
        let server = try server(.none, serverDelegate, questions) { _ in true }
        let (_, clientDelegate) = try client("with certificate", port: server.localPort, certificate: "client")
        XCTAssertEqual(clientDelegate.waitForReadBytes(2), Data("hi".utf8))
        // Still asked (manual trust decides before any data), about no chain: none was requested.
        XCTAssertEqual(questions.all, [[]])
    }

    func testOptionalAsksTheDelegateAboutAClientWithoutOne() throws {
        let serverDelegate = makeDelegate("server")
        let questions = Questions()
        let server = try server(.optional, serverDelegate, questions) { !$0.certificates.isEmpty }
        let (client, clientDelegate) = try client("no certificate", port: server.localPort, certificate: nil)
        _ = clientDelegate.waitForDisconnect(of: client)
        XCTAssertEqual(try serverSideError(serverDelegate)?.code, .trustRejected)
        XCTAssertEqual(questions.all, [[]])
    }

    /// The delegate that does what automatic verification would (`evaluate()`) trusts a real client
    /// certificate (extendedKeyUsage clientAuth) ...
    func testEvaluatingDelegateTrustsAClientCertificate() throws {
        let serverDelegate = makeDelegate("server")
        let questions = Questions()
        let server = try server(.required, serverDelegate, questions) { $0.evaluate() == nil }
        let (_, clientDelegate) = try client("client certificate", port: server.localPort, certificate: "client")
        XCTAssertEqual(clientDelegate.waitForReadBytes(2), Data("hi".utf8))
        XCTAssertEqual(questions.all.count, 1)
    }

    /// ... and refuses a server-only certificate presented by a client.
    func testEvaluatingDelegateRefusesAServerCertificateFromAClient() throws {
        let serverDelegate = makeDelegate("server")
        let questions = Questions()
        let server = try server(.required, serverDelegate, questions) { $0.evaluate() == nil }
        let (client, clientDelegate) = try client("server certificate", port: server.localPort, certificate: "server")
        _ = clientDelegate.waitForDisconnect(of: client)
        XCTAssertEqual(try serverSideError(serverDelegate)?.code, .trustRejected)
        XCTAssertEqual(questions.all.count, 1)
    }
}
