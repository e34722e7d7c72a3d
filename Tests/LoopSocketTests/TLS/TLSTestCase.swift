import Foundation
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Socket tests with the test CA's identities at hand, and helpers for a TLS server and client.
class TLSTestCase: SocketTestCase {
    static func identity(_ certificate: String = "server.pem", key: String = "server.key") throws -> TLSIdentity {
        try TLSIdentity(certificateChainFile: TestCertificates.path(certificate), privateKeyFile: TestCertificates.path(key))
    }

    static let testCA: [TLSCertificate] = (try? TLSCertificate.certificates(pemFile: TestCertificates.path("ca.pem"))) ?? []

    /// A client configuration trusting the test CA.
    static func client(_ body: (inout TLSConfiguration) -> Void = { _ in }) -> TLSConfiguration {
        var configuration = TLSConfiguration.client()
        configuration.trustRoots = .certificates(testCA)
        body(&configuration)
        return configuration
    }

    /// A server that requires a client certificate and asks its delegate whether to trust it.
    static func serverDecidingOnClientCertificates() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.server(identity: try identity())
        configuration.clientAuthentication = .required
        configuration.manualTrustEvaluation = true
        return configuration
    }

    /// A listening socket whose accepted connections start TLS with `configuration` and echo what they read.
    func makeTLSEchoServer(
        _ delegate: RecordingDelegate, interface: String = "127.0.0.1", _ configuration: TLSConfiguration
    ) throws -> GCDAsyncSocket {
        delegate.configure { hooks in
            hooks.accept = { _, child in
                child.startTLS(configuration)
                child.readData(withTimeout: -1, tag: 0)
            }
            hooks.read = { sock, data, _ in
                sock.write(data, withTimeout: -1, tag: 0)
                sock.readData(withTimeout: -1, tag: 0)
            }
        }
        return try makeServer(delegate, interface: interface)
    }

    /// A TLS client named `name` that has connected to the echo server on `port` and had one byte echoed
    /// (so its handshake is complete, and a TLS 1.3 client has taken in the ticket the server sends after it).
    func connectWithOneRoundTrip(
        _ name: String, port: UInt16, _ configuration: TLSConfiguration
    ) throws -> (GCDAsyncSocket, RecordingDelegate) {
        let delegate = makeDelegate(name)
        let client = try connectTLSClient(delegate, port: port, configuration)
        client.write(Data("x".utf8), withTimeout: testTimeout, tag: 0)
        client.readData(toLength: 1, withTimeout: testTimeout, tag: 0)
        XCTAssertEqual(delegate.waitForReadBytes(1), Data("x".utf8))
        return (client, delegate)
    }

    /// A client connecting to `port` on `host` with TLS queued at once, as GCDAsyncSocket users write it:
    /// reads and writes queued after this go over TLS.
    func connectTLSClient(
        _ delegate: RecordingDelegate, port: UInt16, host: String = "127.0.0.1", _ configuration: TLSConfiguration
    ) throws -> GCDAsyncSocket {
        let client = makeSocket(delegate)
        try client.connect(toHost: host, onPort: port, withTimeout: testTimeout)
        client.startTLS(configuration)
        return client
    }

    /// Waits for `sock`'s socketDidSecure.
    func waitForSecure(_ delegate: RecordingDelegate, _ sock: GCDAsyncSocket, file: StaticString = #filePath, line: UInt = #line) {
        delegate.wait("socketDidSecure", file: file, line: line) { records in
            records.contains { $0.socket == ObjectIdentifier(sock) && { if case .secured = $0.event { return true }; return false }($0) }
        }
    }
}

extension Error {
    var tlsError: TLSError? { self as? TLSError }
}
