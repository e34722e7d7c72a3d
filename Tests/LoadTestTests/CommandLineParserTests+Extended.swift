import XCTest
@testable import LoadTest

final class CommandLineParserExtendedTests: XCTestCase {
    private func config(_ arguments: [String]) throws -> LoadConfig {
        guard case .run(let config) = try CommandLineParser.parse(arguments) else {
            XCTFail("not a run: \(arguments)")
            return LoadConfig(mode: .echo)
        }
        return config
    }

    private func rejects(_ arguments: [String], mentioning text: String, line: UInt = #line) {
        XCTAssertThrowsError(try CommandLineParser.parse(arguments), line: line) { error in
            XCTAssertTrue("\(error)".contains(text), "\(error)", line: line)
        }
    }

    func testPacingSlackTakesATimeWithItsUnitForAnOpenLoopRun() throws {
        XCTAssertEqual(try config(["echo", "-p", "9", "--rate", "10k"]).pacingSlack, 50_000)
        XCTAssertEqual(try config(["echo", "-p", "9", "--rate", "10k", "--pacing-slack", "500us"]).pacingSlack, 500_000)
        XCTAssertEqual(try config(["http", "--url", "http://h:8/", "--rate", "1k", "--pacing-slack", "2ms"]).pacingSlack, 2_000_000)
        XCTAssertEqual(try config(["echo", "-p", "9", "--rate", "1k", "--pacing-slack", "750ns"]).pacingSlack, 750)
        XCTAssertEqual(try config(["echo", "-p", "9", "--rate", "1k", "--pacing-slack", "0"]).pacingSlack, 0)
        XCTAssertEqual(try config(["echo", "-p", "9", "--stages", "5s:1k", "--pacing-slack", "1ms"]).pacingSlack, 1_000_000)
        // A bare number is refused: thresholds read one as ms, which would be a surprise here.
        rejects(["echo", "-p", "9", "--rate", "1k", "--pacing-slack", "200"], mentioning: "with its unit")
        rejects(["echo", "-p", "9", "--rate", "1k", "--pacing-slack", "-5us"], mentioning: "--pacing-slack takes")
        rejects(["echo", "-p", "9", "--rate", "1k", "--pacing-slack", "1s"], mentioning: "from 0 to 100ms")
        rejects(["echo", "-p", "9", "--rate", "1k", "--pacing-slack", "fast"], mentioning: "--pacing-slack takes")
        rejects(["echo", "-p", "9", "--pacing-slack", "200us"], mentioning: "give --rate or --stages")
    }

    func testHTTPRequestOptions() throws {
        let c = try config(["http", "--url", "http://127.0.0.1:8080/a", "--url", "http://127.0.0.1:8080/b?x=1",
                            "--method", "POST", "-H", "X-A: 1", "--header", "Authorization: Bearer t", "--body", "{}"])
        XCTAssertEqual(c.http.paths, ["/a", "/b?x=1"])
        XCTAssertEqual(c.path, "/a")
        XCTAssertEqual(c.http.method, "POST")
        XCTAssertEqual(c.http.headers, ["X-A: 1", "Authorization: Bearer t"])
        XCTAssertEqual(c.http.body, Array("{}".utf8))
        rejects(["http", "--url", "http://127.0.0.1:8080/a", "--url", "http://127.0.0.1:8081/b"], mentioning: "same host:port")
        rejects(["http", "--url", "http://h/", "--method", "GE T"], mentioning: "--method")
        rejects(["http", "--url", "http://h/", "-H", "no colon"], mentioning: "Name: value")
        rejects(["http", "--url", "http://h/", "-H", ": empty name"], mentioning: "Name: value")
        rejects(["http", "--url", "http://h/", "--body-file", "/nonexistent/body"], mentioning: "cannot read /nonexistent/body: No such file")
        rejects(["echo", "--port", "1", "--method", "POST"], mentioning: "apply to http mode")
    }

    func testBodyFile() throws {
        let path = "/tmp/loadtest-body-\(getpid())"
        try FileIO.write(Array("from a file".utf8), to: path)
        defer { unlink(path) }
        XCTAssertEqual(try config(["http", "--url", "http://h/", "--body-file", path]).http.body, Array("from a file".utf8))
    }

    func testRateInEveryLoadMode() throws {
        XCTAssertEqual(try config(["stream", "--port", "1", "--rate", "1k"]).size, 65536, "stream chunks default to 64 KiB")
        XCTAssertEqual(try config(["stream", "--port", "1", "--rate", "1k", "-s", "4k"]).size, 4096)
        XCTAssertEqual(try config(["connect", "--port", "1", "--rate", "500"]).rate, 500)
        rejects(["idle", "--port", "1", "--rate", "100"], mentioning: "--rate applies to echo, stream, connect, http")
    }

    func testStartTimes() {
        XCTAssertEqual(CommandLineParser.wallClockTime("2026-11-24T12:00:00Z"), 1_795_521_600)
        XCTAssertEqual(CommandLineParser.wallClockTime("2026-11-24T13:30:00+01:30"), 1_795_521_600)
        XCTAssertEqual(CommandLineParser.wallClockTime("2026-11-24t10:00:00-02:00"), 1_795_521_600)
        XCTAssertEqual(CommandLineParser.wallClockTime("2000-02-29T23:59:59.25Z"), 951_868_799.25)
        XCTAssertEqual(CommandLineParser.wallClockTime("1795521600"), 1_795_521_600)
        XCTAssertEqual(CommandLineParser.wallClockTime("1795521600.5"), 1_795_521_600.5)
        for bad in ["", "tomorrow", "2026-11-24", "2026-11-24T12:00:00", "2026-13-01T00:00:00Z", "2026-11-24T12:00:00Zjunk",
                    "0x10", "1e9", "-5", "2026-11-24T12:00:00.Z", "2026-11-24T25:00:00Z"] {
            XCTAssertNil(CommandLineParser.wallClockTime(bad), bad)
        }
    }

    func testDistributedAndToolOptions() throws {
        let c = try config(["echo", "--port", "9", "--start-at", "2026-11-24T12:00:00Z", "--id", "pod-3",
                            "--hdr-log", "run.hlog", "--metrics", ":9464"])
        XCTAssertEqual(c.startAt, 1_795_521_600)
        XCTAssertEqual(c.runID, "pod-3")
        XCTAssertEqual(c.hdrLogPath, "run.hlog")
        XCTAssertEqual(c.metrics, MetricsAddress(host: "127.0.0.1", port: 9464))
        XCTAssertEqual(try config(["echo", "--port", "9", "--metrics", "[::1]:0"]).metrics, MetricsAddress(host: "::1", port: 0))
        XCTAssertEqual(try config(["echo", "--port", "9", "--metrics", "0.0.0.0:9464"]).metrics, MetricsAddress(host: "0.0.0.0", port: 9464))
        rejects(["echo", "--port", "9", "--metrics", "9464"], mentioning: "HOST:PORT")
        rejects(["echo", "--port", "9", "--metrics", "h:99999"], mentioning: "HOST:PORT")
        rejects(["echo", "--port", "9", "--start-at", "soon"], mentioning: "RFC 3339")
        rejects(["echo", "--port", "9", "--id", ""], mentioning: "--id needs a name")
        rejects(["--start-at", "1795521600"], mentioning: "give a mode")
        rejects(["echo", "--port", "9", "--json", "-", "--hdr-log", "-"], mentioning: "standard output")
    }

    func testMergeMixed() throws {
        XCTAssertEqual(try CommandLineParser.parse(["merge", "a.json", "--mixed"]),
                       .merge(inputs: ["a.json"], jsonPath: nil, svgPath: nil, quiet: false, allowMixed: true))
    }

    func testOutputPathProblemsAreOnePlainLine() throws {
        XCTAssertNil(FileIO.problemWriting("-"))
        XCTAssertNil(FileIO.problemWriting("/tmp/loadtest-new-file-\(getpid()).json"))
        XCTAssertEqual(FileIO.problemWriting("/nonexistent-dir/r.json"), "cannot write /nonexistent-dir/r.json: there is no directory /nonexistent-dir")
        XCTAssertEqual(FileIO.problemWriting("/tmp"), "cannot write /tmp: it is a directory")
        XCTAssertThrowsError(try FileIO.read("/nonexistent-dir/r.json")) { error in
            XCTAssertEqual("\(error)", "cannot read /nonexistent-dir/r.json: No such file or directory")
        }
    }
}
