import XCTest
@testable import LoadTest

/// A protocol that sends its tag and a newline, and expects it echoed back: `--tag` is its own option.
private struct Tagged: LoadProtocol {
    var tag = "a"
    var name: String { "tagged" }

    static var options: [LoadProtocolOption<Self>] {
        [LoadProtocolOption("--tag", value: "TEXT", help: "what each request says (default a)") { proto, text in
            guard !text.isEmpty, !text.contains("\n") else { throw TagError() }
            proto.tag = text
        }]
    }

    func request(sequence: UInt64, connection: Int, into bytes: inout [UInt8]) { bytes += Array((tag + "\n").utf8) }

    func frameReply(_ input: UnsafeRawBufferPointer, sequence: UInt64) -> ReplyFraming {
        guard let end = input.firstIndex(of: 10) else { return .needMore }
        return Array(input[..<end]) == Array(tag.utf8) ? .reply(length: end + 1) : .malformed("not the tag")
    }
}

private struct TagError: Error, CustomStringConvertible {
    var description: String { "a tag on one line" }
}

/// A ``LoadProtocol``'s own options: anywhere on the command line, in `--help`, and set on the protocol each
/// loop runs.
final class LoadProtocolOptionTests: XCTestCase {
    private let mode = LoadTestTool.mode(of: Tagged())

    func testTheOptionIsTakenAnywhereAndReachesTheProtocol() throws {
        let server = try RawTestServer(.echo(chunk: 64))
        defer { server.stop() }
        for placement in [["--tag", "hello"], ["--tag=hello"]] {
            let arguments = ["--port", "\(server.port)", "-c", "2"] + placement
                + ["-d", "0.3", "--warmup", "0", "-l", "1", "-q"]
            guard case .run(let config) = try CommandLineParser.parse(arguments, mode: mode) else {
                return XCTFail("not a run: \(arguments)")
            }
            XCTAssertEqual(config.protocolOptions, [ProtocolOptionValue(flag: "--tag", value: "hello")])
            let result = try LoadRunner(config: config, output: { _ in }).run()
            XCTAssertGreaterThan(result.requests, 0)
            XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
            XCTAssertEqual(result.bytes, result.requests * 6, "every request said hello")
        }
    }

    func testABadValueIsACommandLineError() {
        XCTAssertThrowsError(try CommandLineParser.parse(["--port", "1", "--tag", ""], mode: mode)) { error in
            XCTAssertEqual("\(error)", "--tag: a tag on one line")
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["--port", "1", "--tag"], mode: mode)) { error in
            XCTAssertEqual("\(error)", "--tag needs a value")
        }
        // Another program's mode does not take it.
        XCTAssertThrowsError(try CommandLineParser.parse(["tcp", "--port", "1", "--tag", "x"]))
    }

    func testTheHelpListsTheOptions() {
        XCTAssertEqual(try CommandLineParser.parse(["--port", "1", "--help"], mode: mode), .help)
        let help = CommandLineParser.usage(for: mode)
        XCTAssertTrue(help.contains("Options of the tagged protocol:\n  --tag TEXT          what each request says (default a)\n"), help)
        XCTAssertTrue(help.contains("Defaults in tagged mode: --connections 100, --pipeline 1,"), help)
    }

    /// mqtt-load: its --topic and --payload after loadtest's options, and in its help.
    func testMQTTLoadTakesItsOptionsAnywhere() throws {
        let program = ChildProcess.product("mqtt-load")
        let help = try ChildProcess.run(program, ["--help"])
        XCTAssertEqual(help.status, 0, help.error)
        XCTAssertTrue(help.output.contains("\n  --topic PREFIX "), help.output)
        XCTAssertTrue(help.output.contains("\n  --payload BYTES "), help.output)
        let bad = try ChildProcess.run(program, ["--port", "1", "-c", "1", "--payload", "lots"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.error.contains("--payload: takes 0 to 1048576 bytes, not 'lots'"), bad.error)
        let wildcard = try ChildProcess.run(program, ["--port=1", "--topic=a/#"])
        XCTAssertEqual(wildcard.status, 2)
        XCTAssertTrue(wildcard.error.contains("--topic: a topic name without wildcards"), wildcard.error)
    }
}
