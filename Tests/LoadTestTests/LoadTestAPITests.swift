import Foundation
import Synchronization
import XCTest
@testable import LoadTest

/// LoadTest's Swift API against the command line it mirrors: the same defaults and refusals (the same
/// messages), the same JSON, progress as the run goes, and cancellation.
final class LoadTestAPITests: XCTestCase {
    /// A short echo run's configuration against `port`: one loop, two connections, no warm-up.
    private func short(_ port: UInt16, seconds: Int64 = 1) -> LoadTest.Configuration {
        var configuration = LoadTest.Configuration(mode: .echo, port: port)
        configuration.connections = 2
        configuration.loops = 1
        configuration.warmup = .zero
        configuration.duration = .seconds(seconds)
        configuration.timeout = .seconds(5)
        return configuration
    }

    func testDefaultsAreTheCommandLines() throws {
        for (configuration, line) in [
            (LoadTest.Configuration(mode: .echo, port: 9000), ["echo", "--port", "9000"]),
            (LoadTest.Configuration(mode: .http, url: "http://127.0.0.1:8080/x"), ["http", "--url", "http://127.0.0.1:8080/x"]),
            (LoadTest.Configuration(mode: .udp, port: 9000), ["udp", "--port", "9000"]),
            (LoadTest.Configuration(mode: .idle, port: 9000), ["idle", "--port", "9000"]),
        ] {
            guard case .run(var expected) = try CommandLineParser.parse(line) else { return XCTFail("\(line)") }
            expected.quiet = true
            XCTAssertEqual(try configuration.loadConfig(), expected, "\(line)")
            XCTAssertEqual(configuration.commandLine, line)
        }
    }

    func testEverySettingReachesTheRun() throws {
        var configuration = LoadTest.Configuration(mode: .echo, port: 9000)
        configuration.host = "::1"
        configuration.connections = 7
        configuration.size = 100
        configuration.rate = 250
        configuration.duration = .milliseconds(1500)
        configuration.warmup = .milliseconds(250)
        configuration.timeout = .seconds(3)
        configuration.loops = 2
        configuration.thresholds = ["p99<10ms"]
        configuration.arguments = ["--ramp", "1s"]
        let config = try configuration.loadConfig()
        XCTAssertEqual(config.host, "::1")
        XCTAssertEqual(config.connections, 7)
        XCTAssertEqual(config.size, 100)
        XCTAssertEqual(config.rate, 250)
        XCTAssertEqual(config.duration, 1.5)
        XCTAssertEqual(config.warmup, 0.25)
        XCTAssertEqual(config.timeout, 3)
        XCTAssertEqual(config.loops, 2)
        XCTAssertEqual(config.thresholds.map(\.text), ["p99<10ms"])
        XCTAssertEqual(config.ramp, 1)
    }

    /// Each refusal is the command line's, word for word, for the command line the configuration spells.
    func testValidationErrorsAreTheCommandLines() {
        func with(_ change: (inout LoadTest.Configuration) -> Void) -> LoadTest.Configuration {
            var configuration = LoadTest.Configuration(mode: .echo, port: 9000)
            change(&configuration)
            return configuration
        }
        let cases: [(LoadTest.Configuration, [String])] = [
            (with { $0.connections = 0 }, ["echo", "--port", "9000", "--connections", "0"]),
            (with { $0.size = -1 }, ["echo", "--port", "9000", "--size", "-1"]),
            (with { $0.rate = 0 }, ["echo", "--port", "9000", "--rate", "0.0"]),
            (with { $0.duration = .zero }, ["echo", "--port", "9000", "--duration", "0.0s"]),
            (with { $0.warmup = .seconds(-1) }, ["echo", "--port", "9000", "--warmup", "-1.0s"]),
            (with { $0.rate = 100; $0.pipeline = 4 }, ["echo", "--port", "9000", "--pipeline", "4", "--rate", "100.0"]),
            (with { $0.thresholds = ["p99<<1"] }, ["echo", "--port", "9000", "--threshold", "p99<<1"]),
            (with { $0.arguments = ["--path", "/"] }, ["echo", "--port", "9000", "--path", "/"]),
            (with { $0.host = "" }, ["echo", "--host", "", "--port", "9000"]),
            (with { $0.port = 0 }, ["echo", "--port", "0"]),
            (with { $0.mode = .idle; $0.rate = 10 }, ["idle", "--port", "9000", "--rate", "10.0"]),
            (LoadTest.Configuration(mode: .tcp, port: 80), ["tcp", "--port", "80"]),
            (LoadTest.Configuration(mode: .ws, url: "http://x/"), ["ws", "--url", "http://x/"]),
        ]
        for (configuration, line) in cases {
            XCTAssertEqual(configuration.commandLine, line)
            let cli: String
            do {
                _ = try CommandLineParser.parse(line)
                XCTFail("the command line took \(line)")
                continue
            } catch {
                cli = error.message
            }
            XCTAssertThrowsError(try configuration.validate(), "\(line)") { error in
                XCTAssertEqual((error as? LoadTest.ConfigurationError)?.message, cli)
            }
        }
    }

    /// A LoadProtocol's own options, given as on its program's command line, set the protocol or are refused
    /// as there.
    func testAProtocolsOwnOptionsAreCheckedAsOnItsCommandLine() throws {
        var configuration = LoadTest.Configuration(mode: .custom(Word()), port: 9000)
        configuration.arguments = ["--word", "PING"]
        XCTAssertEqual(try configuration.loadConfig().protocolOptions, [ProtocolOptionValue(flag: "--word", value: "PING")])
        configuration.arguments = ["--word", ""]
        let line = ["--port", "9000", "--word", ""]
        let cli: String
        do {
            _ = try CommandLineParser.parse(line, mode: LoadTestTool.mode(of: Word()))
            return XCTFail("the command line took \(line)")
        } catch {
            cli = error.message
        }
        XCTAssertTrue(cli.contains("a word, not nothing"), cli)
        XCTAssertThrowsError(try configuration.validate()) { error in
            XCTAssertEqual((error as? LoadTest.ConfigurationError)?.message, cli)
        }
    }

    func testARunReportsAndHandsOverEverySecond() async throws {
        let server = try EchoServer()
        defer { try? server.stop() }
        var configuration = short(server.port, seconds: 2)
        configuration.thresholds = ["errors==0", "requests>=1"]
        let seen = Samples()
        let report = try await LoadTest.run(configuration) { seen.add($0) }
        XCTAssertEqual(report.mode, "echo")
        XCTAssertEqual(report.errors.total, 0, report.text)
        XCTAssertGreaterThan(report.requests, 0)
        XCTAssertEqual(report.histogram.count, report.latency.count)
        XCTAssertEqual(report.histogram.buckets.reduce(0) { $0 + $1.count }, report.histogram.count)
        XCTAssertTrue(report.thresholdsMet)
        XCTAssertEqual(report.thresholds.map(\.passed), [true, true])
        XCTAssertNotNil(report.clientCPUSeconds)
        XCTAssertFalse(report.wasCancelled)
        XCTAssertGreaterThanOrEqual(seen.all.count, 2)
        XCTAssertEqual(seen.all, report.timeline)
    }

    /// A LoadProtocol's option given in `arguments` reaches the run: each request is the word, echoed back.
    func testAProtocolRunsWithItsOwnOptions() async throws {
        let server = try EchoServer()
        defer { try? server.stop() }
        var configuration = short(server.port)
        configuration.mode = .custom(Word())
        configuration.arguments = ["--word", "HELLO!"]
        let report = try await LoadTest.run(configuration)
        XCTAssertEqual(report.mode, "word")
        XCTAssertEqual(report.errors.total, 0, report.text)
        XCTAssertGreaterThan(report.requests, 0)
        XCTAssertEqual(report.bytes, report.requests * 6, "six bytes a reply: the word given, not the default")
    }

    /// On a group the caller owns (here the server's), the run leaves the loops running: a second run on them
    /// works, and so does the server.
    func testARunOnTheCallersGroupLeavesItRunning() async throws {
        let server = try EchoServer()
        defer { try? server.stop() }
        var configuration = short(server.port)
        configuration.group = server.group
        configuration.loops = 64  // ignored: the group's loops are used
        for _ in 0..<2 {
            let report = try await LoadTest.run(configuration)
            XCTAssertEqual(report.errors.total, 0, report.text)
            XCTAssertGreaterThan(report.requests, 0)
            XCTAssertEqual(report.result.loops, 1)
        }
    }

    /// The modes without a reply to time run too: connect (churn) and idle.
    func testConnectAndIdleModesRun() async throws {
        let server = try EchoServer()
        defer { try? server.stop() }
        for mode in [LoadTest.Mode.connect, .idle] {
            var configuration = short(server.port)
            configuration.mode = mode
            let report = try await LoadTest.run(configuration)
            XCTAssertEqual(report.mode, mode.name)
            XCTAssertEqual(report.errors.total, 0, report.text)
            if mode == .connect { XCTAssertGreaterThan(report.requests, 0, "connections made") }
            if mode == .idle { XCTAssertEqual(report.connectionsEstablished, 2) }
        }
    }

    /// tcp mode's requests and framing, and stream mode, through `arguments` and the mode values.
    func testTCPAndStreamModesRun() async throws {
        let server = try EchoServer()
        defer { try? server.stop() }
        var tcp = short(server.port)
        tcp.mode = .tcp
        tcp.arguments = ["--send", "PING\\r\\n", "--reply-until", "\\r\\n"]
        let report = try await LoadTest.run(tcp)
        XCTAssertEqual(report.mode, "tcp")
        XCTAssertEqual(report.errors.total, 0, report.text)
        XCTAssertEqual(report.bytes, report.requests * 6)
        var stream = short(server.port)
        stream.mode = .stream
        let streamed = try await LoadTest.run(stream)
        XCTAssertEqual(streamed.mode, "stream")
        XCTAssertGreaterThan(streamed.bytes, 0, streamed.text)
    }

    /// udp mode: the datagrams' fates are in the report's JSON, as the command line writes them.
    func testUDPModeRuns() async throws {
        let server = try UDPTestEchoServer(policy: .echo)
        defer { server.stop() }
        let report = try await LoadTest.run(short(server.port).with { $0.mode = .udp })
        XCTAssertEqual(report.mode, "udp")
        XCTAssertEqual(report.errors.total, 0, report.text)
        XCTAssertGreaterThan(report.requests, 0)
        XCTAssertEqual(report.result.datagrams?.lost, 0)
        XCTAssertTrue(String(decoding: try report.json(), as: UTF8.self).contains("\"datagrams\""))
    }

    /// A threshold the run misses is reported as missed, with the figure it was judged on.
    func testAMissedThresholdIsReported() async throws {
        let server = try EchoServer()
        defer { try? server.stop() }
        var configuration = short(server.port)
        configuration.thresholds = ["errors==0", "requests>=1000000000"]
        let report = try await LoadTest.run(configuration)
        XCTAssertFalse(report.thresholdsMet)
        XCTAssertEqual(report.thresholds.map(\.passed), [true, false])
        XCTAssertEqual(report.thresholds[1].value, Double(report.requests))
        XCTAssertEqual(report.thresholds[1].limit, 1e9)
    }

    /// What `--json` writes is the report's JSON, byte for byte; a report read back writes it again.
    func testTheReportsJSONIsTheCommandLinesFile() async throws {
        let server = try EchoServer()
        defer { try? server.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("api-\(getpid()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var configuration = short(server.port)
        configuration.arguments = ["--json", path]
        let report = try await LoadTest.run(configuration)
        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        XCTAssertEqual(try report.json(), file)
        XCTAssertEqual(try LoadTest.Report(json: file).json(), file)
        XCTAssertEqual(try LoadTest.Report(json: file), report)
        XCTAssertThrowsError(try LoadTest.Report(json: Data("{}".utf8)))
        // The command line writes the same JSON for its own run.
        let before = (disposition(SIGINT), disposition(SIGTERM))
        XCTAssertEqual(LoadTestMain.run(configuration.commandLine + ["--quiet"]), 0)
        let cli = try Data(contentsOf: URL(fileURLWithPath: path))
        XCTAssertEqual(try LoadTest.Report(json: cli).json(), cli)
        // The run in this process leaves SIGINT and SIGTERM as they were: ignored here, they would stay ignored
        // in every program the process starts afterwards (a test's peer that SIGTERM no longer stops).
        XCTAssertTrue(before == (disposition(SIGINT), disposition(SIGTERM)), "SIGINT and SIGTERM are as before")
        XCTAssertNotEqual(disposition(SIGTERM), unsafeBitCast(SIG_IGN, to: UInt.self))
    }

    /// A signal's handler as `sigaction` reports it (SIG_DFL, SIG_IGN or a function), as a number.
    private func disposition(_ signal: Int32) -> UInt {
        var action = sigaction()
        sigaction(signal, nil, &action)
        return unsafeBitCast(action.__sigaction_handler.sa_handler, to: UInt.self)
    }

    /// Cancelled during the load, the run ends within a few seconds (not its 60) with the figures so far.
    func testCancellingEndsTheRunPromptlyWithAPartialReport() async throws {
        let server = try EchoServer()
        defer { try? server.stop() }
        let configuration = short(server.port, seconds: 60)
        let (seconds, continuation) = AsyncStream.makeStream(of: LoadTest.Sample.self)
        let run = Task {
            defer { continuation.finish() }
            return try await LoadTest.run(configuration) { continuation.yield($0) }
        }
        for await _ in seconds { break }  // the load has begun (bounded: the stream ends with the run)
        let cancelled = ContinuousClock.now
        run.cancel()
        let report = try await run.value
        XCTAssertLessThan(ContinuousClock.now - cancelled, .seconds(15))
        XCTAssertTrue(report.wasCancelled)
        XCTAssertLessThan(report.duration, 30)
        XCTAssertGreaterThan(report.requests, 0)
    }

    func testATaskCancelledBeforeTheCallThrowsCancellationError() async {
        let run = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await LoadTest.run(LoadTest.Configuration(mode: .echo, port: 9))
        }
        do {
            _ = try await run.value
            XCTFail("ran")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
    }

    func testARunThatCannotConnectThrowsRunError() async throws {
        let server = try EchoServer()
        let port = server.port
        try server.stop()  // nothing listens there now
        do {
            _ = try await LoadTest.run(short(port))
            XCTFail("ran")
        } catch let error as LoadTest.RunError {
            XCTAssertTrue(error.message.contains("no connection to 127.0.0.1:\(port) could be made"), error.message)
        }
    }

    func testComparingReportsThroughTheAPI() async throws {
        let server = try EchoServer()
        defer { try? server.stop() }
        let report = try await LoadTest.run(short(server.port))
        let comparison = try LoadTest.compare(base: [report], new: [report])
        XCTAssertEqual(comparison.baseRuns, 1)
        XCTAssertEqual(comparison.changes.first { $0.figure == "throughput" }?.change ?? .nan, 0, accuracy: 1e-9)
        XCTAssertThrowsError(try LoadTest.compare(base: [], new: [report]))
        XCTAssertThrowsError(try LoadTest.compare(base: [report], new: [report], confidence: 2))
    }
}

extension LoadTest.Configuration {
    /// This configuration changed by `change`.
    fileprivate func with(_ change: (inout Self) -> Void) -> Self {
        var copy = self
        change(&copy)
        return copy
    }
}

/// A protocol with an option of its own: `--word TEXT`, refused when empty.
private struct Word: LoadProtocol {
    var word = "PING"
    var name: String { "word" }
    func request(sequence: UInt64, connection: Int, into bytes: inout [UInt8]) { bytes += Array(word.utf8) }
    func frameReply(_ input: UnsafeRawBufferPointer, sequence: UInt64) -> ReplyFraming {
        input.count >= word.utf8.count ? .reply(length: word.utf8.count) : .needMore
    }
    struct Empty: Error, CustomStringConvertible { var description: String { "a word, not nothing" } }
    static var options: [LoadProtocolOption<Word>] {
        [LoadProtocolOption("--word", value: "TEXT", help: "what to send") { word, text in
            guard !text.isEmpty else { throw Empty() }
            word.word = text
        }]
    }
}

/// The samples a progress handler was given.
private final class Samples: Sendable {
    private let samples = Mutex<[LoadTest.Sample]>([])
    func add(_ sample: LoadTest.Sample) { samples.withLock { $0.append(sample) } }
    var all: [LoadTest.Sample] { samples.withLock { $0 } }
}
