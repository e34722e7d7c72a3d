import EpollLoop
import Foundation
@testable import HTTPHello
import LoopSocket
import SharedTestSupport
import XCTest

/// http-hello over HTTPS (`--tls-cert`/`--tls-key`), checked with curl as the client.
final class HTTPHelloTLSTests: XCTestCase {
    private var group: EventLoopGroup!
    private var listener: GCDAsyncSocket!
    private var server: HTTPHelloServer!

    override func tearDownWithError() throws {
        listener?.disconnect()
        try group?.shutdownGracefully(timeout: .seconds(10))
    }

    private func startHTTPS() throws -> UInt16 {
        var configuration = HTTPHelloServer.Configuration()
        let identity = try TLSIdentity(
            certificateChainFile: TestCertificates.path("server.pem"), privateKeyFile: TestCertificates.path("server.key"))
        configuration.tls = .server(identity: identity, alpn: ["http/1.1"])
        group = try EventLoopGroup(numberOfLoops: 1, name: "https-test")
        server = HTTPHelloServer(configuration: configuration)
        listener = GCDAsyncSocket(delegate: server, delegateQueue: nil, loop: group.loops[0], group: group)
        try listener.accept(onInterface: "127.0.0.1", port: 0)
        return listener.localPort
    }

    /// Runs curl (bounded by --max-time) and returns its exit status, standard output and standard error.
    private func curl(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
        let curl = URL(fileURLWithPath: try TestTool.path("curl"))
        let process = Process()
        process.executableURL = curl
        process.arguments = ["--silent", "--show-error", "--max-time", "10", "--cacert", TestCertificates.path("ca.pem")] + arguments
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    func testCurlKeepAliveOverTLS13WithALPN() throws {
        let port = try startHTTPS()
        let url = "https://localhost:\(port)/"
        // Two requests on one connection; -w reports the version, the TLS verification and the reuse.
        let result = try curl(["--tlsv1.3", "--http1.1", "-w", " %{http_code} %{ssl_verify_result} %{num_connects}\n", url, url])
        XCTAssertEqual(result.status, 0, result.error)
        XCTAssertEqual(result.output, "hello 200 0 1\nhello 200 0 0\n")
    }

    func testCurlOverTLS12AndHEAD() throws {
        let port = try startHTTPS()
        let result = try curl(["--tls-max", "1.2", "--head", "https://127.0.0.1:\(port)/"])
        XCTAssertEqual(result.status, 0, result.error)
        XCTAssertTrue(result.output.hasPrefix("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"), result.output)
    }

    func testCurlRefusesAnUntrustedServer() throws {
        let port = try startHTTPS()
        // The name does not match the certificate (it names localhost and 127.0.0.1): curl refuses.
        let result = try curl(["--resolve", "wrong.test:\(port):127.0.0.1", "https://wrong.test:\(port)/"])
        XCTAssertEqual(result.status, 60, result.error)  // CURLE_PEER_FAILED_VERIFICATION
    }
}
