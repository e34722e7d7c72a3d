import Foundation
import SharedTestSupport
import XCTest
@testable import LoadTest

/// The distributed path without Kubernetes: several loadtest processes, started apart, share one `--start-at`
/// and drive one server; `loadtest merge` adds their JSON up. Each client runs in a network namespace of its
/// own, with its own address, when the test can make namespaces (it runs as root with `ip`); otherwise they
/// share the loopback.
final class DistributedRunTests: XCTestCase {
    /// Network namespaces made by this test: a server namespace and one per client, joined by veth pairs
    /// (client i is 10.77.i.2, and reaches the server at 10.77.i.1). Deleted by `remove()`.
    struct Namespaces {
        let server: String
        let clients: [String]

        static func make(clients: Int) -> Namespaces? {
            let tag = "\(getpid() % 100_000)"
            let server = "lt-srv-\(tag)"
            guard ip(["netns", "add", server]) else { return nil }
            var made = Namespaces(server: server, clients: [])
            guard ip(["-n", server, "link", "set", "lo", "up"]) else {
                made.remove()
                return nil
            }
            for i in 1...clients {
                let name = "lt-c\(i)-\(tag)"
                let ok = ip(["netns", "add", name])
                if ok { made = Namespaces(server: server, clients: made.clients + [name]) }
                guard ok,
                      ip(["link", "add", "vc\(i)-\(tag)", "netns", name, "type", "veth", "peer", "name", "vs\(i)-\(tag)", "netns", server]),
                      ip(["-n", server, "addr", "add", "10.77.\(i).1/24", "dev", "vs\(i)-\(tag)"]),
                      ip(["-n", server, "link", "set", "vs\(i)-\(tag)", "up"]),
                      ip(["-n", name, "addr", "add", "10.77.\(i).2/24", "dev", "vc\(i)-\(tag)"]),
                      ip(["-n", name, "link", "set", "vc\(i)-\(tag)", "up"]),
                      ip(["-n", name, "link", "set", "lo", "up"]) else {
                    made.remove()
                    return nil
                }
            }
            return made
        }

        func remove() {
            for name in clients + [server] { _ = Self.ip(["netns", "del", name]) }
        }

        static func ip(_ arguments: [String]) -> Bool {
            guard let ip = TestTool.find("ip"), let result = try? ChildProcess.run(ip, arguments, seconds: 10) else { return false }
            return result.status == 0
        }
    }

    func testProcessesStartedApartMeasureOneWindowAndMergeToTheirSum() throws {
        let count = 3
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lt-dist-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // The server: the package's echo-server, in the server namespace, or in-process on the loopback.
        let ip = TestTool.find("ip")
        let namespaces = ip != nil ? Namespaces.make(clients: count) : nil
        defer { namespaces?.remove() }
        var inProcess: EchoServer?
        var serverProcess: ChildProcess?
        let port: UInt16
        if let namespaces, let ip {
            let server = try ChildProcess(ip, ["netns", "exec", namespaces.server, ChildProcess.product("echo-server"), "--port", "7000", "--host", "*"])
            serverProcess = server
            XCTAssertTrue(server.waitForOutput(containing: "listening", seconds: 20), "echo-server did not start: \(server.standardError)")
            port = 7000
        } else {
            inProcess = try EchoServer()
            port = inProcess!.port
        }
        defer {
            serverProcess?.process.terminate()
            serverProcess?.wait(seconds: 10)
            try? inProcess?.stop()
        }

        // Started one after the other, each with the same start time a few seconds ahead.
        let startAt = (Date().timeIntervalSince1970 + 4).rounded(.up)
        var clients: [ChildProcess] = []
        for i in 1...count {
            let json = directory.appendingPathComponent("p\(i).json").path
            let host = namespaces == nil ? "127.0.0.1" : "10.77.\(i).1"
            var command = [ChildProcess.product("loadtest"), "echo", "--host", host, "--port", "\(port)", "-c", "4", "-l", "1",
                           "-d", "1", "--warmup", "0.2", "--start-at", "\(Int(startAt))", "--id", "p\(i)", "--json", json, "-q"]
            if let namespaces, let ip { command = [ip, "netns", "exec", namespaces.clients[i - 1]] + command }
            clients.append(try ChildProcess(command.removeFirst(), command))
        }
        for (i, client) in clients.enumerated() {
            XCTAssertEqual(client.wait(seconds: 60), 0, "client \(i + 1): \(client.standardOutput) \(client.standardError)")
        }
        let parts = try (1...count).map { i in
            try RunResult.decode(Data(contentsOf: directory.appendingPathComponent("p\(i).json")))
        }
        for part in parts {
            XCTAssertGreaterThan(part.requests, 0)
            XCTAssertEqual(part.errors.total, 0, "\(part.errors)")
            XCTAssertEqual(part.startAt, startAt)
            // The window starts at the start time plus the warm-up, whenever the process was started.
            XCTAssertEqual(try XCTUnwrap(part.windowStart), startAt + 0.2, accuracy: 0.1)
        }

        let merged = directory.appendingPathComponent("merged.json").path
        let run = try ChildProcess.run(ChildProcess.product("loadtest"),
                                       ["merge"] + (1...count).map { directory.appendingPathComponent("p\($0).json").path } + ["--json", merged, "-q"])
        XCTAssertEqual(run.status, 0, run.error)
        let sum = try RunResult.decode(Data(contentsOf: URL(fileURLWithPath: merged)))
        XCTAssertEqual(sum.sources, count)
        XCTAssertEqual(sum.requests, parts.map(\.requests).reduce(0, +))
        XCTAssertEqual(sum.bytes, parts.map(\.bytes).reduce(0, +))
        XCTAssertEqual(sum.connections, parts.map(\.connections).reduce(0, +))
        XCTAssertEqual(sum.latencyUs.count, parts.map(\.latencyUs.count).reduce(0, +))
        XCTAssertEqual(sum.requestsPerSecond, parts.map(\.requestsPerSecond).reduce(0, +), accuracy: 1e-6)
        XCTAssertEqual(sum.id, "p1,p2,p3")
        XCTAssertLessThan(try XCTUnwrap(sum.windowStartSpread), 0.1, "the windows line up")
        XCTAssertNil(sum.warnings, "\(sum.warnings ?? [])")
        if namespaces != nil {
            XCTAssertEqual(sum.target, (1...count).map { "10.77.\($0).1:7000" }.joined(separator: ","))
        }
    }
}
