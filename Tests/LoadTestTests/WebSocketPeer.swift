import Foundation
import SharedTestSupport
import XCTest

/// A WebSocket peer from Benchmarks/ws-peer.py, run by python3 for one test: the `websockets` package's echo
/// server (`echo`, over TLS with the test certificates when `tls`), or the scripted conformance server
/// (`script`). It listens on 127.0.0.1 at a free port, which it prints first.
final class WebSocketPeer {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Benchmarks/ws-peer.py").path

    let child: ChildProcess
    let port: UInt16

    init(_ kind: String, tls: Bool = false) throws {
        var arguments = [Self.script, kind, "60"]
        if tls { arguments += [TestCertificates.path("server.pem"), TestCertificates.path("server.key")] }
        child = try ChildProcess(TestTool.path("python3"), arguments)
        guard child.waitForOutput(containing: "\n", seconds: 30),
              let line = child.standardOutput.split(separator: "\n").first, line.hasPrefix("listening "),
              let port = UInt16(line.dropFirst("listening ".count)) else {
            child.process.terminate()
            child.wait(seconds: 10)
            // A failure, never a skip, naming what installs the websockets package.
            throw PeerError(message: "ws-peer.py \(kind) did not start (can python3 import websockets? \(TestTool.websocketsHint)): "
                            + child.standardOutput + child.standardError)
        }
        self.port = port
    }

    /// Waits (bounded) until the peer has printed `text`; true if it did.
    func waitFor(_ text: String, seconds: Double = 10) -> Bool { child.waitForOutput(containing: text, seconds: seconds) }

    /// Stops the peer; what it printed.
    @discardableResult
    func stop() -> String {
        child.process.terminate()
        child.wait(seconds: 10)
        return child.standardOutput + child.standardError
    }
}

/// The peer could not be started.
struct PeerError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
