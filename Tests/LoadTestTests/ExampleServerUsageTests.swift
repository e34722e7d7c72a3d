import Foundation
import Glibc
import XCTest

import EpollLoop

/// The example servers' command lines as a newcomer meets them: `--help` is usage text, an option a server
/// cannot honour is refused, the port is optional (a free one, printed), and the UDP server does not slip
/// onto a port another process holds.
final class ExampleServerUsageTests: XCTestCase {
    private static let servers = ["echo-server", "async-echo-server", "http-hello", "udp-echo-server"]

    /// A synopsis, a sentence on what the server does, and a line for every option it takes.
    func testEachHelpIsUsageText() throws {
        for name in Self.servers {
            let run = try ChildProcess.run(ChildProcess.product(name), ["--help"])
            XCTAssertEqual(run.status, 0, name)
            let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            XCTAssertTrue(lines.first?.hasPrefix("usage: \(name) [--port P]") == true, run.output)
            XCTAssertGreaterThan(lines.count, 2, "more than a line: \(run.output)")
            XCTAssertGreaterThan(lines.dropFirst(2).first?.count ?? 0, 20, "what it does: \(run.output)")
            XCTAssertTrue(lines.contains("Options:"), run.output)
            var expected = ["--port P", "--host H", "--loops N", "--metrics HOST:PORT", "--stall-ms N", "--help"]
            expected += name == "udp-echo-server" ? ["--reuse-port"] : ["--tls-cert FILE", "--tls-key FILE"]
            for option in expected {
                let line = lines.first { $0.hasPrefix("  \(option)") }
                XCTAssertNotNil(line, "\(name) --help has a line for \(option): \(run.output)")
                XCTAssertGreaterThan(line?.count ?? 0, 30, "\(option) is explained")
            }
            if name == "udp-echo-server" { XCTAssertFalse(run.output.contains("--tls"), run.output) }
        }
    }

    /// `--version` prints the program's name and the package's one version, and exits 0; `--help` lists it.
    func testEachServerAndLoadtestPrintTheVersion() throws {
        for name in Self.servers + ["loadtest"] {
            let run = try ChildProcess.run(ChildProcess.product(name), ["--version"])
            XCTAssertEqual(run.status, 0, name)
            XCTAssertEqual(run.output, "\(name) \(EpollLoopVersion.current)\n", name)
            let help = try ChildProcess.run(ChildProcess.product(name), ["--help"])
            XCTAssertTrue(help.output.contains("--version"), "\(name) --help names --version")
        }
    }

    func testTheUDPServerRefusesTLSOptions() throws {
        let run = try ChildProcess.run(ChildProcess.product("udp-echo-server"), ["--port", "0", "--tls-cert", "a.pem", "--tls-key", "a.key"])
        XCTAssertEqual(run.status, 2)
        XCTAssertTrue(run.error.contains("udp-echo-server does not serve TLS: --tls-cert does not apply"), run.error)
    }

    /// Without --port, a server listens on a free port and says which (as its usage says).
    func testWithoutAPortAServerTakesAFreeOneAndSaysWhich() throws {
        let server = try ChildProcess(ChildProcess.product("echo-server"), ["--loops", "1"])
        defer { server.process.terminate(); server.wait(seconds: 20) }
        XCTAssertTrue(server.waitForOutput(containing: "listening", seconds: 20), server.standardOutput + server.standardError)
        let port = try XCTUnwrap(Self.port(in: server.standardOutput))
        XCTAssertGreaterThan(port, 0)
    }

    /// A second udp-echo-server on a port in use fails with a clear error, with one loop or several (whose
    /// sockets share the port among themselves through SO_REUSEPORT); with --reuse-port on both, they share.
    func testASecondUDPServerOnABusyPortFailsUnlessAskedToShare() throws {
        let first = try ChildProcess(ChildProcess.product("udp-echo-server"), ["--port", "0", "--loops", "2"])
        defer { first.process.terminate(); first.wait(seconds: 20) }
        XCTAssertTrue(first.waitForOutput(containing: "bound to", seconds: 20), first.standardOutput + first.standardError)
        let port = try XCTUnwrap(Self.port(in: first.standardOutput))
        for loops in ["1", "2"] {
            let second = try ChildProcess.run(ChildProcess.product("udp-echo-server"), ["--port", "\(port)", "--loops", loops], seconds: 20)
            XCTAssertEqual(second.status, 2, "loops \(loops): \(second.output)")
            XCTAssertTrue(second.error.contains("Address already in use"), second.error)
            XCTAssertTrue(second.error.contains("--reuse-port"), second.error)
            XCTAssertFalse(second.output.contains("bound to"), second.output)
        }

        let sharing = try ChildProcess(ChildProcess.product("udp-echo-server"), ["--port", "0", "--loops", "1", "--reuse-port"])
        defer { sharing.process.terminate(); sharing.wait(seconds: 20) }
        XCTAssertTrue(sharing.waitForOutput(containing: "bound to", seconds: 20), sharing.standardOutput + sharing.standardError)
        let shared = try XCTUnwrap(Self.port(in: sharing.standardOutput))
        let other = try ChildProcess(ChildProcess.product("udp-echo-server"), ["--port", "\(shared)", "--loops", "1", "--reuse-port"])
        defer { other.process.terminate(); other.wait(seconds: 20) }
        XCTAssertTrue(other.waitForOutput(containing: "bound to 127.0.0.1 port \(shared)", seconds: 20), other.standardOutput + other.standardError)
    }

    /// The port in "… port N …".
    private static func port(in line: String) -> UInt16? {
        guard let range = line.range(of: " port ") else { return nil }
        return UInt16(line[range.upperBound...].prefix { $0.isNumber })
    }
}
