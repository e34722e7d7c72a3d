import Foundation
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Session resumption never stands in for a trust decision: a client resumes only when asked, keeps its
/// sessions apart by everything that decides trust, and with manual trust asks its delegate on every
/// handshake, resumed ones included.
final class TLSResumptionTrustTests: TLSTestCase {
    /// The settings dictionary of a GCDAsyncSocket client that decides trust itself.
    private static func manualSettings(peerID: String? = nil) -> [String: Any] {
        var settings: [String: Any] = [GCDAsyncSocketManuallyEvaluateTrust: true, kCFStreamSSLPeerName: "localhost"]
        if let peerID { settings[GCDAsyncSocketSSLPeerID] = Data(peerID.utf8) }
        return settings
    }

    /// A client whose delegate answers `answer` to the trust question, after the handshake and one byte's round
    /// trip (which also takes in the TLS 1.3 ticket); its delegate's trust questions are its `.trust` events.
    private func manualClient(
        _ name: String, port: UInt16, _ settings: [String: Any], answer: Bool
    ) throws -> (GCDAsyncSocket, RecordingDelegate) {
        let delegate = makeDelegate(name)
        delegate.configure { hooks in hooks.trust = { _, _, handler in handler(answer) } }
        let client = makeSocket(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: port, withTimeout: testTimeout)
        client.startTLS(settings)
        return (client, delegate)
    }

    /// One byte's round trip on a secured client, then a clean close.
    private func roundTripAndClose(_ client: GCDAsyncSocket, _ delegate: RecordingDelegate) {
        client.write(Data("x".utf8), withTimeout: testTimeout, tag: 0)
        client.readData(toLength: 1, withTimeout: testTimeout, tag: 0)
        XCTAssertEqual(delegate.waitForReadBytes(1), Data("x".utf8))
        client.disconnect()
        delegate.waitForDisconnect(of: client)
    }

    /// The trust questions `delegate` was asked, once there is one. (With no delegate queue, a handler
    /// called inside the callback may secure or close the socket before the callback has returned and its
    /// question is recorded.)
    private func trustQuestions(
        _ delegate: RecordingDelegate, atLeast count: Int = 1, file: StaticString = #filePath, line: UInt = #line
    ) -> [TLSTrust] {
        let isTrust: (SocketEvent) -> Bool = { if case .trust = $0 { return true }; return false }
        delegate.wait("\(count) trust question(s)", file: file, line: line) { records in
            records.lazy.filter { isTrust($0.event) }.count >= count
        }
        return delegate.events.compactMap { if case .trust(let trust) = $0 { return trust }; return nil }
    }

    private func echoServer() throws -> GCDAsyncSocket {
        try makeTLSEchoServer(makeDelegate("server"), .server(identity: try Self.identity()))
    }

    /// A client that refuses the server is refused, whatever another client of the process accepted before:
    /// without `GCDAsyncSocketSSLPeerID` nothing is resumed, so every handshake verifies and asks.
    func testRefusingClientIsRefusedAfterAnAcceptingOne() throws {
        let server = try echoServer()
        let (accepting, acceptingDelegate) = try manualClient("accepting", port: server.localPort, Self.manualSettings(), answer: true)
        roundTripAndClose(accepting, acceptingDelegate)
        XCTAssertEqual(trustQuestions(acceptingDelegate).count, 1)

        let (refusing, refusingDelegate) = try manualClient("refusing", port: server.localPort, Self.manualSettings(), answer: false)
        XCTAssertEqual(refusingDelegate.waitForDisconnect(of: refusing)?.tlsError?.code, .trustRejected)
        XCTAssertEqual(trustQuestions(refusingDelegate).count, 1, "the refusing delegate was asked")
        XCTAssertFalse(refusingDelegate.events.contains { if case .secured = $0 { return true }; return false })
    }

    /// With `GCDAsyncSocketSSLPeerID` the session resumes, and the delegate is still asked, with the chain the
    /// session carries: an accepting delegate gets a resumed connection, a refusing one a refusal.
    func testManualTrustIsAskedOnResumedHandshakes() throws {
        let server = try echoServer()
        let settings = Self.manualSettings(peerID: "broker-1")
        let (first, firstDelegate) = try manualClient("first", port: server.localPort, settings, answer: true)
        roundTripAndClose(first, firstDelegate)

        let (second, secondDelegate) = try manualClient("second", port: server.localPort, settings, answer: true)
        waitForSecure(secondDelegate, second)
        XCTAssertEqual(second.tlsInfo?.sessionResumed, true, "resumed when asked for")
        let questions = trustQuestions(secondDelegate)
        XCTAssertEqual(questions.count, 1, "asked on the resumed handshake")
        XCTAssertEqual(questions.first?.certificates.first?.subject.contains("CN=localhost"), true)
        XCTAssertEqual(questions.first?.hostName, "localhost")
        roundTripAndClose(second, secondDelegate)

        let (refusing, refusingDelegate) = try manualClient("refusing", port: server.localPort, settings, answer: false)
        XCTAssertEqual(refusingDelegate.waitForDisconnect(of: refusing)?.tlsError?.code, .trustRejected)
        XCTAssertEqual(trustQuestions(refusingDelegate).count, 1)
        XCTAssertFalse(refusingDelegate.events.contains { if case .secured = $0 { return true }; return false })

        // The refused session was dropped: the next connection makes a full handshake.
        let (next, nextDelegate) = try manualClient("after the refusal", port: server.localPort, settings, answer: true)
        waitForSecure(nextDelegate, next)
        XCTAssertEqual(next.tlsInfo?.sessionResumed, false)
        XCTAssertEqual(trustQuestions(nextDelegate).count, 1)
    }

    /// A client resumes only when asked: not by default (typed or dictionary), and by
    /// `GCDAsyncSocketSSLPeerID`, `LoopSocketTLSSessionResumption` or `sessionResumption` when asked.
    func testClientsResumeOnlyWhenAsked() throws {
        let roots = Self.testCA
        let cases: [(String, TLSConfiguration, Bool)] = [
            ("typed default", Self.client(), false),
            ("typed sessionResumption", Self.client { $0.sessionResumption = true }, true),
            ("dictionary default", try TLSConfiguration(gcdAsyncSocketSettings: [LoopSocketTLSTrustRoots: roots]), false),
            ("dictionary peer ID", try TLSConfiguration(gcdAsyncSocketSettings: [
                LoopSocketTLSTrustRoots: roots, GCDAsyncSocketSSLPeerID: Data("peer".utf8)]), true),
            ("dictionary resumption key", try TLSConfiguration(gcdAsyncSocketSettings: [
                LoopSocketTLSTrustRoots: roots, LoopSocketTLSSessionResumption: true]), true),
        ]
        for (name, configuration, resumes) in cases {
            // A server (a port) per case: cases with the same settings would share sessions.
            let server = try echoServer()
            for round in 0..<2 {
                let (client, delegate) = try connectWithOneRoundTrip("\(name) \(round)", port: server.localPort, configuration)
                XCTAssertEqual(client.tlsInfo?.sessionResumed, resumes && round == 1, "\(name), round \(round)")
                client.disconnect()
                delegate.waitForDisconnect(of: client)
            }
        }
    }

    /// A peer ID narrows the server name, never replaces it: a session verified for `localhost` is not offered
    /// to a connection that must verify another name, which then fails on the name.
    func testPeerIDSessionIsNotOfferedForAnotherName() throws {
        let server = try echoServer()
        let peerID = Data("same-peer".utf8)
        let (first, firstDelegate) = try connectWithOneRoundTrip("localhost", port: server.localPort, Self.client {
            $0.serverName = "localhost"
            $0.sessionKey = peerID
        })
        XCTAssertEqual(first.tlsInfo?.sessionResumed, false)
        first.disconnect()
        firstDelegate.waitForDisconnect(of: first)

        let delegate = makeDelegate("other name")
        let other = try connectTLSClient(delegate, port: server.localPort, Self.client {
            $0.serverName = "wrong.test"
            $0.sessionKey = peerID
        })
        XCTAssertEqual(delegate.waitForDisconnect(of: other)?.tlsError?.verificationFailure, "hostname mismatch")
    }

    /// A session made with verification off is not offered by a client that verifies: it lives with the
    /// settings it was made under.
    func testSessionOfAnUnverifiedClientIsNotOfferedToAVerifyingOne() throws {
        let server = try echoServer()
        let peerID = Data("same-peer".utf8)
        for round in 0..<2 {
            let (client, delegate) = try connectWithOneRoundTrip("unverified \(round)", port: server.localPort, Self.client {
                $0.certificateVerification = .none
                $0.sessionKey = peerID
            })
            XCTAssertEqual(client.tlsInfo?.sessionResumed, round == 1, "round \(round)")
            client.disconnect()
            delegate.waitForDisconnect(of: client)
        }
        // The system's store does not hold the test CA: a full handshake fails verification.
        let delegate = makeDelegate("verifying")
        var verifying = TLSConfiguration.client(serverName: "localhost")
        verifying.sessionKey = peerID
        let client = try connectTLSClient(delegate, port: server.localPort, verifying)
        XCTAssertEqual(delegate.waitForDisconnect(of: client)?.tlsError?.code, .certificateVerificationFailed)
    }

    /// A server deciding on client certificates is asked on every handshake, resumed ones included, and sees
    /// the client's certificate each time (a resumed session carries the client's own certificate).
    func testServerAsksItsDelegateOnResumedHandshakes() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, try Self.serverDecidingOnClientCertificates())
        serverDelegate.configure { hooks in hooks.trust = { _, _, handler in handler(true) } }
        let identity = try Self.identity("client.pem", key: "client.key")
        let clientTLS = Self.client {
            $0.identity = identity
            $0.sessionResumption = true
        }
        for round in 0..<2 {
            let (client, delegate) = try connectWithOneRoundTrip("client \(round)", port: server.localPort, clientTLS)
            XCTAssertEqual(client.tlsInfo?.sessionResumed, round == 1, "round \(round)")
            let questions = trustQuestions(serverDelegate, atLeast: round + 1)
            XCTAssertEqual(questions.count, round + 1, "round \(round)")
            XCTAssertEqual(questions.last?.certificates.first?.subject.contains("CN=test client"), true, "round \(round)")
            client.disconnect()
            delegate.waitForDisconnect(of: client)
        }
    }
}
