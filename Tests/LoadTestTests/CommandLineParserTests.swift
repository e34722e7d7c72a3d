import XCTest
@testable import LoadTest

final class CommandLineParserTests: XCTestCase {
    private func config(_ args: [String], file: StaticString = #filePath, line: UInt = #line) -> LoadConfig? {
        do {
            guard case .run(let config) = try CommandLineParser.parse(args) else {
                XCTFail("expected a run for \(args)", file: file, line: line)
                return nil
            }
            return config
        } catch {
            XCTFail("\(args) failed: \(error)", file: file, line: line)
            return nil
        }
    }

    private func rejects(_ args: [String], mentioning word: String, file: StaticString = #filePath, line: UInt = #line) {
        do {
            let command = try CommandLineParser.parse(args)
            XCTFail("\(args) should be rejected, got \(command)", file: file, line: line)
        } catch {
            XCTAssertTrue(error.message.contains(word), "'\(error.message)' should mention '\(word)'", file: file, line: line)
        }
    }

    func testNoArgumentsIsTheDemo() {
        guard let c = config([]) else { return }
        XCTAssertEqual(c.mode, .demo)
        XCTAssertEqual(c.connections, 1000)
        XCTAssertEqual(c.size, 64)
        XCTAssertEqual(c.duration, 10)
        XCTAssertNil(c.rate)
        XCTAssertEqual(config(["--duration", "3"])?.duration, 3)
    }

    func testEchoWithEveryOption() {
        guard let c = config(["echo", "--host", "10.0.0.2", "--port", "9000", "-c", "5k", "--size", "16k",
                              "--pipeline", "8", "--duration", "500ms", "--warmup", "0", "--ramp", "2s",
                              "--loops", "3", "--timeout", "1m", "--max-connecting", "10", "--json", "out.json",
                              "--svg", "out.svg", "--quiet"]) else { return }
        XCTAssertEqual(c.mode, .echo)
        XCTAssertEqual(c.host, "10.0.0.2")
        XCTAssertEqual(c.port, 9000)
        XCTAssertEqual(c.connections, 5000)
        XCTAssertEqual(c.size, 16384)
        XCTAssertEqual(c.pipeline, 8)
        XCTAssertEqual(c.duration, 0.5)
        XCTAssertEqual(c.warmup, 0)
        XCTAssertEqual(c.ramp, 2)
        XCTAssertEqual(c.loops, 3)
        XCTAssertEqual(c.timeout, 60)
        XCTAssertEqual(c.maxConnecting, 10)
        XCTAssertEqual(c.jsonPath, "out.json")
        XCTAssertEqual(c.svgPath, "out.svg")
        XCTAssertTrue(c.quiet)
    }

    func testEqualsFormAndRate() {
        guard let c = config(["echo", "--port=9000", "--rate=50k", "--connections=100"]) else { return }
        XCTAssertEqual(c.port, 9000)
        XCTAssertEqual(c.rate, 50_000)
        // "/s" is optional, as in --stages and --threshold.
        XCTAssertEqual(config(["echo", "--port", "9000", "-r", "2.5k/s"])?.rate, 2_500)
        XCTAssertTrue(c.isOpenLoop)
    }

    func testOtherModes() {
        XCTAssertEqual(config(["stream", "--port", "1"])?.mode, .stream)
        XCTAssertEqual(config(["idle", "--port", "1", "-c", "10000"])?.connections, 10_000)
        XCTAssertEqual(config(["connect", "--port", "1", "--close", "fin"])?.closeWithReset, false)
        guard let http = config(["http", "--url", "http://localhost:8080/hello?x=1"]) else { return }
        XCTAssertEqual(http.host, "localhost")
        XCTAssertEqual(http.port, 8080)
        XCTAssertEqual(http.path, "/hello?x=1")
        XCTAssertEqual(http.hostHeader, "localhost:8080")
    }

    func testURLs() throws {
        XCTAssertEqual(try CommandLineParser.parseURL("http://example.com"),
                       .init(host: "example.com", port: 80, path: "/", hostHeader: "example.com"))
        XCTAssertEqual(try CommandLineParser.parseURL("http://[::1]:81/a/b"),
                       .init(host: "::1", port: 81, path: "/a/b", hostHeader: "[::1]:81"))
        XCTAssertEqual(try CommandLineParser.parseURL("http://h:1?q").path, "/?q")
        XCTAssertEqual(try CommandLineParser.parseURL("https://h/"),
                       .init(host: "h", port: 443, path: "/", hostHeader: "h", secure: true))
        XCTAssertThrowsError(try CommandLineParser.parseURL("ftp://h/"))
        XCTAssertThrowsError(try CommandLineParser.parseURL("http://:80/"))
        XCTAssertThrowsError(try CommandLineParser.parseURL("http://h:99999/"))
        XCTAssertThrowsError(try CommandLineParser.parseURL("http://[::1/"))
        XCTAssertThrowsError(try CommandLineParser.parseURL("ftp://h/"))
    }

    func testHelpAndMerge() throws {
        XCTAssertEqual(try CommandLineParser.parse(["--help"]), .help)
        XCTAssertEqual(try CommandLineParser.parse(["echo", "-h"]), .modeHelp(.echo))
        XCTAssertEqual(try CommandLineParser.parse(["--version"]), .version)
        XCTAssertEqual(try CommandLineParser.parse(["version"]), .version)
        XCTAssertEqual(try CommandLineParser.parse(["merge", "a.json", "b.json", "--json", "m.json"]),
                       .merge(inputs: ["a.json", "b.json"], jsonPath: "m.json", svgPath: nil, quiet: false))
    }

    func testInvalidInputGivesClearErrors() {
        rejects(["bogus"], mentioning: "unknown mode")
        rejects(["echo"], mentioning: "--port")
        rejects(["echo", "--port"], mentioning: "needs a value")
        rejects(["echo", "--port", "0"], mentioning: "--port")
        rejects(["echo", "--port", "70000"], mentioning: "--port")
        rejects(["echo", "--port", "x"], mentioning: "--port")
        rejects(["echo", "--port", "1", "--connections", "0"], mentioning: "--connections")
        rejects(["echo", "--port", "1", "--connections", "-5"], mentioning: "--connections")
        rejects(["echo", "--port", "1", "--connections", "1.5"], mentioning: "--connections")
        rejects(["echo", "--port", "1", "--size", "0"], mentioning: "--size")
        rejects(["echo", "--port", "1", "--size", "99999999999999999999"], mentioning: "--size")
        rejects(["echo", "--port", "1", "--size", "2m"], mentioning: "--size")
        XCTAssertEqual(config(["echo", "--port", "1", "--size", "1m"])?.size, 1 << 20)
        rejects(["echo", "--port", "1", "--duration", "0"], mentioning: "--duration")
        rejects(["echo", "--port", "1", "--duration", "-1"], mentioning: "--duration")
        rejects(["echo", "--port", "1", "--duration", "soon"], mentioning: "--duration")
        rejects(["echo", "--port", "1", "--duration", "nan"], mentioning: "--duration")
        rejects(["echo", "--port", "1", "--rate", "0"], mentioning: "--rate")
        rejects(["echo", "--port", "1", "--rate", "fast"], mentioning: "--rate")
        rejects(["echo", "--port", "1", "--rate", "100", "--pipeline", "4"], mentioning: "--pipeline")
        rejects(["idle", "--port", "1", "--rate", "100"], mentioning: "--rate")
        rejects(["echo", "--port", "1", "--close", "rst"], mentioning: "connect mode")
        rejects(["connect", "--port", "1", "--close", "maybe"], mentioning: "--close")
        rejects(["echo", "--port", "1", "--frobnicate"], mentioning: "unknown option")
        rejects(["echo", "--port", "1", "stray"], mentioning: "unexpected argument")
        rejects(["http"], mentioning: "--url")
        rejects(["http", "--url", "ftp://x/"], mentioning: "https://")
        rejects(["echo", "--port", "1", "--url", "http://x/"], mentioning: "http and ws modes")
        rejects(["--port", "9000"], mentioning: "mode")
        rejects(["echo", "--port", "1", "--json"], mentioning: "needs a value")
        rejects(["echo", "--port", "1", "--loops", "0"], mentioning: "--loops")
        rejects(["merge"], mentioning: "JSON files")
        rejects(["merge", "a.json", "--bogus"], mentioning: "unknown option")
    }

    func testArbitraryTokensNeverTrap() {
        // Malformed input of every shape is an error or a configuration, never a crash.
        let tokens = ["echo", "http", "merge", "--port", "--rate", "--size", "--duration", "--url", "=", "--port=",
                      "--size=", "-1", "0", "1e400", "1k", "9999999999999999999999", "", " ", "http://", "[",
                      "--connections", "ms", "5ms", "--json", "-", "é", "٣", "--loops", "1.", ".", "k", "--close"]
        var rng = SplitMix64(state: 1)
        for _ in 0..<5000 {
            let count = Int(rng.next() % 7)
            let args = (0..<count).map { _ in tokens[Int(rng.next() % UInt64(tokens.count))] }
            _ = try? CommandLineParser.parse(args)
        }
    }
}
