import XCTest
@testable import LoadTest

/// `loadtest MODE --help`: every mode's own options, the common ones that mean something in it, its defaults
/// and an example that parses; the global help lists every mode.
final class ModeHelpTests: XCTestCase {
    func testEveryModeHasItsOwnHelpWithDefaultsAndAnExample() throws {
        for mode in LoadMode.all {
            XCTAssertEqual(try CommandLineParser.parse([mode.name, "--help"]), .modeHelp(mode), mode.name)
            XCTAssertEqual(try CommandLineParser.parse([mode.name, "--port", "1", "-h"]), .modeHelp(mode), mode.name)
            XCTAssertEqual(try CommandLineParser.parse(["help", mode.name]), .modeHelp(mode), mode.name)
            let help = CommandLineParser.usage(of: mode)
            XCTAssertTrue(help.hasPrefix("usage: loadtest \(mode.name) "), help)
            XCTAssertTrue(help.contains(mode.summary), "\(mode.name): its summary")
            XCTAssertTrue(help.contains("\nExample:\n  loadtest \(mode.name) "), "\(mode.name) has no example")
            XCTAssertTrue(help.contains("Defaults in \(mode.name) mode: --connections \(mode.defaultConnections),"),
                          help)
            XCTAssertTrue(help.contains("--duration 10s"), help)
            XCTAssertTrue(help.contains("All modes and merge: loadtest --help"), help)
        }
        XCTAssertEqual(try CommandLineParser.parse(["--help"]), .help)
        XCTAssertEqual(try CommandLineParser.parse(["help"]), .help)
        XCTAssertEqual(try CommandLineParser.parse(["help", "merge"]), .help)
    }

    /// The mode's own options all appear, no other mode's do, and of the common ones only those that mean
    /// something in it (no --rate for idle, no --tls for udp, no --size for tcp).
    func testAModesHelpShowsTheOptionsItTakesAndNoOthers() {
        let otherModesFlags = Set(ModeOptions.all.flatMap(\.flags))
        for mode in LoadMode.all {
            let help = CommandLineParser.usage(of: mode)
            let own = Set(mode.options.flatMap(\.flags))
            for flag in own { XCTAssertTrue(help.contains("\n  \(flag) "), "\(mode.name) --help lacks \(flag)") }
            for flag in otherModesFlags.subtracting(own) {
                XCTAssertFalse(help.contains("\n  \(flag) "), "\(mode.name) --help shows \(flag), not its option")
            }
        }
        let idle = CommandLineParser.usage(of: .idle), udp = CommandLineParser.usage(of: .udp)
        let tcp = CommandLineParser.usage(of: .tcp), stream = CommandLineParser.usage(of: .stream)
        XCTAssertFalse(idle.contains("\n  --rate "))
        XCTAssertFalse(idle.contains("\n  --warmup "))
        XCTAssertFalse(idle.contains("\n  --pipeline "))
        XCTAssertFalse(udp.contains("\n  --tls "))
        XCTAssertTrue(udp.contains("\n  --size "))
        XCTAssertFalse(tcp.contains("\n  --size "))
        XCTAssertTrue(tcp.contains("\n  --tls "))
        XCTAssertTrue(stream.contains("\n  --size "))
        XCTAssertFalse(stream.contains("\n  --pipeline "))
        XCTAssertTrue(CommandLineParser.usage(of: .http).hasPrefix("usage: loadtest http --url URL"))
        XCTAssertTrue(CommandLineParser.usage(of: .ws).hasPrefix("usage: loadtest ws --url URL"))
    }

    /// Each example is a command line the parser takes for that mode, and prints as a shell reads it back.
    func testEachExampleParsesAndCopiesIntoAShell() throws {
        for mode in LoadMode.all {
            let example = mode.example
            XCTAssertFalse(example.isEmpty, "\(mode.name) has no example")
            guard case .run(let config) = try CommandLineParser.parse([mode.name] + example) else {
                return XCTFail("\(mode.name)'s example is not a run")
            }
            XCTAssertEqual(config.mode, mode)
            let printed = example.map(CommandLineParser.shellQuoted).joined(separator: " ")
            let shell = try ChildProcess.run("/bin/sh", ["-c", "printf '%s\\n' " + printed])
            XCTAssertEqual(shell.output, example.map { $0 + "\n" }.joined(), "\(mode.name): \(printed)")
        }
        XCTAssertEqual(CommandLineParser.shellQuoted("it's"), "'it'\\''s'")
    }

    /// The defaults line reads a fresh configuration: the in-process demo's server takes a core.
    func testTheDefaultsAreTheModesOwn() {
        XCTAssertTrue(CommandLineParser.defaults(of: .stream).hasPrefix("Defaults in stream mode: --connections 10, --size 64,"))
        XCTAssertTrue(CommandLineParser.defaults(of: .connect).contains("--connections 16,"))
        XCTAssertFalse(CommandLineParser.defaults(of: .idle).contains("--warmup"))
        XCTAssertTrue(CommandLineParser.defaults(of: .echo).contains("--loops \(LoadConfig(mode: .echo).loops) (one per core)"))
    }

    /// The global help names every mode, and the lists of modes in it are whole.
    func testTheGlobalHelpListsEveryMode() {
        let usage = CommandLineParser.usage
        for mode in LoadMode.all { XCTAssertTrue(usage.contains("\n" + mode.summary), mode.name) }
        let entries = CommandLineParser.commonOptionEntries
        let pipeline = entries.first { $0.flag == "--pipeline" }?.text ?? ""
        for mode in LoadMode.all where mode.pipelines { XCTAssertTrue(pipeline.contains(mode.name), "--pipeline: \(mode.name)") }
        let size = entries.first { $0.flag == "--size" }?.text ?? ""
        for mode in LoadMode.all where CommandLineParser.commonOption("--size", appliesTo: mode) {
            XCTAssertTrue(size.contains(mode.name), "--size: \(mode.name)")
        }
        XCTAssertTrue(usage.contains("for http and ws --url URL"))
    }

    /// The program prints the mode's help and exits 0.
    func testTheProgramPrintsAModesHelp() throws {
        let run = try ChildProcess.run(ChildProcess.product("loadtest"), ["tcp", "--help"])
        XCTAssertEqual(run.status, 0, run.error)
        XCTAssertEqual(run.output, CommandLineParser.usage(of: .tcp) + "\n")
    }
}
