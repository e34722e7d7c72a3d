import Foundation
import XCTest

/// How the TCP engine uses its state machine, read from the source: the state changes only through
/// `handle(_:)`, every action it returns is looked at, the TLS layer's object is made and dropped only by the
/// actions that say so, and the faces hear of the engine by one route (two hot sink methods and one report).
final class ConnectionStateUseTests: XCTestCase {
    /// The code lines of the engine's and the TCP faces' files, with where each is.
    static func tcpCodeLines() throws -> [(place: String, line: String)] {
        let engine = try SourceScanner.files(in: "Engine")
        let faces = try SourceScanner.files(in: "") { $0.hasPrefix("GCDAsyncSocket") }
        let async = try SourceScanner.files(in: "Async")
        return try (engine + faces + async).flatMap { url in
            let source = try String(contentsOf: url, encoding: .utf8)
            return SourceScanner.codeLines(of: source).enumerated().map { ("\(url.lastPathComponent):\($0.offset + 1)", $0.element) }
        }
    }

    /// Lines of `lines` that match `pattern`.
    static func matches(_ pattern: String, in lines: [(place: String, line: String)]) -> [String] {
        lines.filter { $0.line.range(of: pattern, options: .regularExpression) != nil }.map { "\($0.place): \($0.line)" }
    }

    func testNoActionIsDropped() throws {
        let lines = try Self.tcpCodeLines()
        // The transition table's builder runs every event to see where it leads; it is the one exception.
        let dropped = Self.matches(#"_ = [A-Za-z.]*handle\("#, in: lines).filter { !$0.contains("next.handle(event)") }
        XCTAssertEqual(dropped, [], "a transition's action is thrown away")
    }

    func testTheStateIsAssignedOnlyByItsTransitions() throws {
        let lines = try Self.tcpCodeLines()
        XCTAssertEqual(Self.matches(#"connectionState\s*=[^=]"#, in: lines).filter { !$0.contains("var connectionState") }, [])
        // The TLS layer: made by `startHandshake`'s action, dropped by `tearDown`'s (in `endTLS`).
        let layer = Self.matches(#"tlsLayer\s*=[^=]"#, in: lines).filter { !$0.contains("var tlsLayer") }
        XCTAssertEqual(layer.count, 2, layer.joined(separator: "\n"))
        XCTAssertEqual(Self.matches(#"\btransport\s*="#, in: lines), [], "a transport beside the state")
    }

    /// The engine's events reach the sink by the hot read and write and one report (beside them only the
    /// face's translation of errors, `sinkError`, which is no event); the faces override no more.
    func testTheSinkIsOneRoute() throws {
        let lines = try Self.tcpCodeLines()
        let declared = Self.matches(#"^\s*func sink[A-Z]|^\s*var sink[A-Z]"#, in: lines)
        XCTAssertEqual(declared.count, 4, "the engine's sink members:\n" + declared.joined(separator: "\n"))
        XCTAssertEqual(Self.matches(#"^\s*func sinkError\("#, in: lines).count, 1)
        let overridden = Self.matches(#"override (func|var) sink"#, in: lines)
        XCTAssertEqual(overridden.count, 4, overridden.joined(separator: "\n"))
        XCTAssertEqual(Self.matches(#"override func sinkReport\(_ event: ConnectionReport\)"#, in: lines).count, 1)
    }
}
