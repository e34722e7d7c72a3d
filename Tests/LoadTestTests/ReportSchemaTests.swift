import EpollLoop
import Foundation
import Glibc
import SharedTestSupport
import XCTest
@testable import LoadTest

/// docs/loadtest-report.schema.json against real reports: a short run of every mode that runs in-process (and
/// the options that add keys: stages, several URLs, TLS, the server's process and loops, thresholds, merge),
/// each report validated with `additionalProperties: false`, so a key written without a schema entry fails here.
final class ReportSchemaTests: XCTestCase {
    static let schemaPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/loadtest-report.schema.json").path

    private func schema() throws -> JSONSchemaSubset {
        JSONSchemaSubset(try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: Self.schemaPath))))
    }

    private func run(_ mode: LoadMode, port: UInt16, _ adjust: (inout LoadConfig) -> Void = { _ in }) throws
        -> RunResult
    {
        try shortRun(mode, port: port, connections: 2, duration: 0.3, adjust)
    }

    /// The runs, named: every mode, and the options that add keys.
    private func reports() throws -> [(name: String, result: RunResult)] {
        var reports: [(name: String, result: RunResult)] = []
        let echo = try EchoServer(loops: 1)
        defer { XCTAssertNoThrow(try echo.stop()) }
        let group = echo.group
        let endpoint = try MetricsEndpoint(address: MetricsAddress(host: "127.0.0.1", port: 0), loop: group.loops[0]) {
            group.prometheusText()
        }
        defer { endpoint.close() }
        try group.startLagProbe(resolution: .milliseconds(1))
        let measured = try run(.echo, port: echo.port) {
            $0.pipeline = 2
            $0.serverPID = getpid()
            $0.serverMetrics = MetricsAddress(host: "127.0.0.1", port: endpoint.port)
            $0.runID = "measured"
            $0.startAt = Date().timeIntervalSince1970 + 0.3
            $0.thresholds = [try! Threshold.parse("p99<10s"), try! Threshold.parse("rate>=1")]
        }
        reports.append(("echo with --server-pid, --server-metrics, --id, --start-at, --threshold", measured))
        reports.append(("echo, open loop with --stages", try run(.echo, port: echo.port) {
            $0.stages = try? ArrivalStages.parse("0.2s:400,0.2s:400")
            $0.rate = $0.stages?.meanRate
            $0.duration = 0.4
            $0.warmup = 0
        }))
        reports.append(("stream", try run(.stream, port: echo.port)))
        reports.append(("stream, open loop", try run(.stream, port: echo.port) { $0.rate = 200; $0.size = 4096 }))
        reports.append(("connect", try run(.connect, port: echo.port)))
        reports.append(("idle", try run(.idle, port: echo.port)))
        let again = try run(.echo, port: echo.port) { $0.pipeline = 2; $0.runID = "again" }
        // Runs one after the other: windows that do not overlap, so the merge warns.
        reports.append(("merge", try RunResult.merge([measured, again], allowMixed: true)))

        let hello = try HelloServer()
        defer { XCTAssertNoThrow(try hello.stop()) }
        reports.append(("http with two URLs", try run(.http, port: hello.port) {
            $0.hostHeader = "127.0.0.1:\(hello.port)"
            $0.path = "/a"
            $0.http.paths = ["/a", "/b"]
        }))

        let udp = try UDPTestEchoServer(policy: .echo)
        defer { udp.stop() }
        reports.append(("udp", try run(.udp, port: udp.port)))

        let raw = try RawTestServer(.echo(chunk: 64))
        defer { raw.stop() }
        reports.append(("tcp", try run(.tcp, port: raw.port) {
            $0.tcp.requests = [Array("ping\n".utf8)]
            $0.tcp.formats = [.until([10])]
        }))

        let corrupting = try CorruptingEchoServer()
        defer { XCTAssertNoThrow(try corrupting.stop()) }
        reports.append(("echo with errors", try run(.echo, port: corrupting.port)))

        let tls = try TLSEchoTestServer()
        defer { XCTAssertNoThrow(try tls.stop()) }
        // Churn over TLS: handshakes made in the window, timed apart.
        reports.append(("connect over TLS", try run(.connect, port: tls.port) {
            $0.tls.enabled = true
            $0.tls.caFile = TestCertificates.path("ca.pem")
            $0.tls.serverName = "localhost"
        }))

        let peer = try WebSocketPeer("echo")
        defer { peer.stop() }
        reports.append(("ws echo", try run(.ws, port: peer.port) { $0.hostHeader = "127.0.0.1:\(peer.port)" }))
        reports.append(("ws heartbeats", try run(.ws, port: peer.port) {
            $0.hostHeader = "127.0.0.1:\(peer.port)"
            $0.ws.workload = .heartbeat(interval: 0.05)
        }))
        return reports
    }

    func testEveryModesReportMatchesTheSchema() throws {
        var schema = try schema()
        let reports = try reports()
        XCTAssertEqual(Set(reports.map(\.result.mode)), Set(LoadMode.all.map(\.resultName)), "every mode ran")
        for (name, result) in reports {
            XCTAssertEqual(schema.validate(try JSONValue.parse(result.jsonData())), [], name)
        }
        // Every key the schema declares was in some report (the error kinds have their own test).
        let unseen = schema.declaredProperties.subtracting(schema.visited)
            .filter { !$0.hasPrefix("#/$defs/errors/properties/by_kind/properties/") }
        XCTAssertEqual(unseen, [], "declared, and in no report")
    }

    /// docs/loadtest.md's example JSON (scripts/example-report.sh) is a report of the schema too.
    func testTheDocumentedExampleMatchesTheSchema() throws {
        var schema = try schema()
        let example = URL(fileURLWithPath: Self.schemaPath).deletingLastPathComponent()
            .appendingPathComponent("loadtest-example.json")
        XCTAssertEqual(schema.validate(try JSONValue.parse(Data(contentsOf: example))), [])
    }

    /// The validator refuses what the schema does not allow: an undeclared key, a fraction for an integer, a
    /// missing key, a value off the list.
    func testTheSchemaRefusesWhatItDoesNotDeclare() throws {
        var schema = try schema()
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try run(.echo, port: server.port)
        guard case .object(var report) = try JSONValue.parse(result.jsonData()) else { return XCTFail("not an object") }
        XCTAssertEqual(schema.validate(.object(report)), [])
        var extra = report
        extra["new_key"] = .number(1, isInteger: true)
        XCTAssertEqual(schema.validate(.object(extra)), ["/: the key new_key is not in the schema"])
        var fraction = report
        fraction["requests"] = .number(1.5, isInteger: false)
        XCTAssertEqual(schema.validate(.object(fraction)), ["/requests: 1.5 where the schema wants integer"])
        var missing = report
        missing["timeline"] = nil
        XCTAssertEqual(schema.validate(.object(missing)), ["/: the required key timeline is missing"])
        report["tool"] = .string("wrk")
        XCTAssertEqual(schema.validate(.object(report)), ["/tool: \"wrk\" is not one of the values the schema lists"])
        var unknown = JSONSchemaSubset(.object(["type": .string("object"), "pattern": .string("x")]))
        XCTAssertEqual(unknown.validate(.object([:])), ["#: the keyword pattern is outside the validated subset"])
    }

    /// `errors.by_kind` lists every kind loadtest counts, and no other.
    func testTheSchemaListsEveryErrorKind() throws {
        let schema = try schema()
        guard case .object(let kinds)? = schema.root["$defs"]?["errors"]?["properties"]?["by_kind"]?["properties"]
        else { return XCTFail("no errors.by_kind in the schema") }
        XCTAssertEqual(Set(kinds.keys), Set(ErrorKind.allCases.map(\.rawValue)))
    }

    /// The report names its schema version, and one written before there was one still reads (and is written
    /// back with it).
    func testTheReportCarriesTheSchemaVersion() throws {
        let schema = try schema()
        XCTAssertEqual(schema.root["properties"]?["schema_version"]?["enum"], .array([.number(1, isInteger: true)]))
        XCTAssertEqual(RunResult.schemaVersion, 1)
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        var result = try run(.echo, port: server.port)
        XCTAssertEqual(try JSONValue.parse(result.jsonData())["schema_version"], .number(1, isInteger: true))
        result.schemaVersion = nil
        let old = try XCTUnwrap(try JSONSerialization.jsonObject(with: result.jsonData()) as? [String: Any])
        var older = old
        older["schema_version"] = nil
        let read = try RunResult.decode(JSONSerialization.data(withJSONObject: older))
        XCTAssertNil(read.schemaVersion)
        XCTAssertEqual(try JSONValue.parse(read.jsonData())["schema_version"], .number(1, isInteger: true))
    }
}
