import COpenSSL
import Foundation
import SharedTestSupport
import XCTest

@testable import LoopSocket

/// Manual trust fails closed: while the delegate has not answered, OpenSSL's verify hook reports no success,
/// so a handshake driven again before the answer (nothing in the engine does that today) stays paused rather
/// than letting the peer in unasked. Two connections handshake in memory, their bytes handed across by the
/// test, so that each step is the test's.
final class TLSTrustPendingTests: TLSTestCase {
    /// Moves what `from` wrote to the input of `to`'s next step.
    private func deliver(_ from: TLSConnection, to: TLSConnection) {
        guard from.hasOutput else { return }
        let output = from.output
        to.stash.append(contentsOf: output)
        from.outputSent(output.count)
    }

    /// One handshake step, named.
    private func step(_ tls: TLSConnection) -> String {
        switch tls.withInput(nil, { tls.handshake() }) {
        case .done: return "done"
        case .needsInput: return "needsInput"
        case .needsTrust: return "needsTrust"
        case .failed(let error): return "failed(\(error.code))"
        }
    }

    /// A server with the test CA's identity and a manual-trust client, run to the client's trust question.
    private func pausedClient(_ version: TLSVersion) throws -> (client: TLSConnection, server: TLSConnection) {
        var serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverTLS.maximumVersion = version
        let server = try TLSConnection(context: TLSContext(configuration: serverTLS), serverName: nil, sessionKey: nil)
        let clientTLS = Self.client { $0.manualTrustEvaluation = true }
        let client = try TLSConnection(context: TLSContext(configuration: clientTLS), serverName: "localhost", sessionKey: nil)
        XCTAssertEqual(step(client), "needsInput")  // ClientHello written
        deliver(client, to: server)
        XCTAssertEqual(step(server), "needsInput")  // its flight written
        deliver(server, to: client)
        XCTAssertEqual(step(client), "needsTrust")
        return (client, server)
    }

    func testClientHandshakeDrivenBeforeTheAnswerStaysPaused() throws {
        for version in TLSVersion.allCases {
            let (client, server) = try pausedClient(version)
            for attempt in 1...3 {
                XCTAssertEqual(step(client), "needsTrust", "\(version.name), step \(attempt) without an answer")
                XCTAssertFalse(client.handshakeFinished, "\(version.name): finished without an answer")
                XCTAssertFalse(client.hasOutput, "\(version.name): the client answered the server unasked")
            }
            client.decideTrust(true)
            XCTAssertEqual(step(client), version == .v1_3 ? "done" : "needsInput", version.name)
            deliver(client, to: server)
            XCTAssertEqual(step(server), "done", version.name)
            deliver(server, to: client)
            XCTAssertEqual(step(client), "done", version.name)
        }
    }

    func testRefusalAfterARepeatedStepStillFailsTheHandshake() throws {
        for version in TLSVersion.allCases {
            let (client, _) = try pausedClient(version)
            XCTAssertEqual(step(client), "needsTrust", version.name)
            client.decideTrust(false)
            XCTAssertEqual(step(client), "failed(trustRejected)", version.name)
        }
    }
}
