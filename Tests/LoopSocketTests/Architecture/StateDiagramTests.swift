import Foundation
@testable import LoopSocket
import XCTest

/// Every state diagram in docs/architecture.md matches the code it draws.
///
/// A diagram is a fenced `mermaid` block whose first line is `stateDiagram-v2`, directly preceded by
/// `<!-- state-diagram: TypeName in Sources/LoopSocket/…/File.swift -->`. For each: its states (other than
/// `[*]`) are exactly the cases of the enum `TypeName` in that file, read from the source; and its edges
/// (`from --> to: event`) are exactly the transition table the type exposes, when it exposes one
/// (``transitionTables``), or else each edge's event is a case of the `Event` enum in the same file.
final class StateDiagramTests: XCTestCase {
    /// The transition tables the code makes, by the type name a diagram's marker gives: each edge as
    /// `from --> to: event`.
    static var transitionTables: [String: [String]] {
        var tables = ["Lifecycle": ConnectionState.lifecycleTransitions.map { "\($0.from) --> \($0.to): \($0.event)" },
                      "TLSPhase": ConnectionState.tlsTransitions.map { "\($0.from) --> \($0.to): \($0.event)" }]
        for part in DatagramState.Part.allCases {
            tables[part.rawValue] = DatagramState.transitions(of: part).map { "\($0.from) --> \($0.to): \($0.event)" }
        }
        return tables
    }

    struct Diagram {
        let typeName: String
        let path: String
        let line: Int
        let states: Set<String>
        let edges: [String]
    }

    static var packageRoot: URL {
        SourceScanner.loopSocketSources.deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The marked diagrams of `markdown`.
    static func diagrams(in markdown: String) throws -> [Diagram] {
        let lines = markdown.components(separatedBy: "\n")
        let marker = try NSRegularExpression(pattern: #"^<!-- state-diagram: (\S+) in (\S+) -->$"#)
        let edge = try NSRegularExpression(pattern: #"^\s*(\S+)\s*-->\s*(\S+?)\s*(?::\s*(.+?))?\s*$"#)
        var found: [Diagram] = []
        for (index, line) in lines.enumerated() {
            guard let match = marker.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)),
                  let type = Range(match.range(at: 1), in: line), let path = Range(match.range(at: 2), in: line) else { continue }
            guard index + 2 < lines.count, lines[index + 1] == "```mermaid", lines[index + 2].trimmingCharacters(in: .whitespaces) == "stateDiagram-v2" else {
                XCTFail("line \(index + 1): the marker is not directly followed by a mermaid stateDiagram-v2 block")
                continue
            }
            var states = Set<String>()
            var edges: [String] = []
            var cursor = index + 3
            while cursor < lines.count && lines[cursor] != "```" {
                let text = lines[cursor]
                if let e = edge.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) {
                    let from = String(text[Range(e.range(at: 1), in: text)!])
                    let to = String(text[Range(e.range(at: 2), in: text)!])
                    let event = Range(e.range(at: 3), in: text).map { String(text[$0]) }
                    for state in [from, to] where state != "[*]" { states.insert(state) }
                    if from != "[*]" && to != "[*]" { edges.append("\(from) --> \(to): \(event ?? "")") }
                }
                cursor += 1
            }
            found.append(Diagram(typeName: String(line[type]), path: String(line[path]), line: index + 1, states: states, edges: edges))
        }
        return found
    }

    /// The names of the cases declared directly in `enum typeName` (nested types' cases left out) in `source`;
    /// a nested type may be named with its path (`DatagramState.Lifecycle`), whose last part is looked up.
    static func caseNames(ofEnum qualifiedName: String, in source: String) -> [String]? {
        let typeName = qualifiedName.split(separator: ".").last.map(String.init) ?? qualifiedName
        let lines = SourceScanner.codeLines(of: source)
        guard let start = lines.firstIndex(where: {
            $0.range(of: #"\benum \#(typeName)\b"#, options: .regularExpression) != nil
        }) else { return nil }
        var depth = 0
        var names: [String] = []
        for line in lines[start...] {
            let depthAtStart = depth
            for character in line {
                if character == "{" { depth += 1 }
                if character == "}" { depth -= 1 }
            }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if depthAtStart == 1 && trimmed.hasPrefix("case ") {
                var parens = 0
                var current = ""
                for character in trimmed.dropFirst(5) {
                    if character == "(" { parens += 1 }
                    if character == ")" { parens -= 1 }
                    if character == "," && parens == 0 {
                        names.append(current)
                        current = ""
                    } else {
                        current.append(character)
                    }
                }
                names.append(current)
            }
            if depthAtStart > 0 && depth == 0 { break }
        }
        return names.map { name in
            String(name.prefix { $0.isLetter || $0.isNumber || $0 == "_" }.trimmingCharacters(in: .whitespaces))
        }.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func testEveryMarkedDiagramMatchesItsType() throws {
        let markdown = try String(contentsOf: Self.packageRoot.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let diagrams = try Self.diagrams(in: markdown)
        XCTAssertTrue(diagrams.contains { $0.typeName == "Lifecycle" }, "the TCP engine's diagram is missing")
        XCTAssertTrue(diagrams.contains { $0.typeName == "TLSPhase" }, "the TCP engine's TLS diagram is missing")
        for part in DatagramState.Part.allCases {
            XCTAssertTrue(diagrams.contains { $0.typeName == part.rawValue }, "the UDP engine's \(part.rawValue) diagram is missing")
        }
        for diagram in diagrams {
            let where_ = "docs/architecture.md:\(diagram.line) (\(diagram.typeName))"
            let source = try String(contentsOf: Self.packageRoot.appendingPathComponent(diagram.path), encoding: .utf8)
            guard let cases = Self.caseNames(ofEnum: diagram.typeName, in: source) else {
                XCTFail("\(where_): no enum \(diagram.typeName) in \(diagram.path)")
                continue
            }
            XCTAssertEqual(diagram.states, Set(cases), "\(where_): the diagram's states are not the enum's cases")
            if let table = Self.transitionTables[diagram.typeName] {
                XCTAssertEqual(Set(diagram.edges), Set(table), "\(where_): the diagram's edges are not the code's transitions")
                XCTAssertEqual(diagram.edges.count, Set(diagram.edges).count, "\(where_): an edge is drawn twice")
            } else if let events = Self.caseNames(ofEnum: "Event", in: source) {
                for edge in diagram.edges {
                    let event = String(edge.split(separator: ":", maxSplits: 1).last ?? "").trimmingCharacters(in: .whitespaces)
                    XCTAssertTrue(events.contains(event), "\(where_): \(edge) names no case of Event")
                }
            }
        }
    }

    /// The checks above can fail: a drawn state or edge the code does not have is found.
    func testAWrongDiagramIsCaught() throws {
        let markdown = """
            <!-- state-diagram: Lifecycle in Sources/LoopSocket/Engine/ConnectionState.swift -->
            ```mermaid
            stateDiagram-v2
                [*] --> idle
                idle --> open: connectAsked
                open --> closing: closed
            ```
            """
        let diagram = try XCTUnwrap(Self.diagrams(in: markdown).first)
        XCTAssertEqual(diagram.states, ["idle", "open", "closing"])
        XCTAssertEqual(diagram.edges, ["idle --> open: connectAsked", "open --> closing: closed"])
        let table = try XCTUnwrap(Self.transitionTables["Lifecycle"])
        XCTAssertFalse(Set(diagram.edges).isSubset(of: Set(table)))
        let source = try String(contentsOf: Self.packageRoot.appendingPathComponent("Sources/LoopSocket/Engine/ConnectionState.swift"), encoding: .utf8)
        XCTAssertEqual(Self.caseNames(ofEnum: "Lifecycle", in: source), ["idle", "connecting", "listening", "starting", "open"])
        // UDP's tables: the edges the code makes, and not one where the case stays what it was.
        let udp = try XCTUnwrap(Self.transitionTables["DatagramState.Lifecycle"])
        XCTAssertTrue(udp.contains("connecting --> bound: connectFailed") && udp.contains("connecting --> idle: connectFailed"))
        XCTAssertFalse(udp.contains("closed --> closed: closed"))
        XCTAssertEqual(Self.transitionTables["DatagramState.Ending"].map(Set.init), ["none --> afterSends: closeAfterSendsAsked", "afterSends --> none: closed"])
    }
}
