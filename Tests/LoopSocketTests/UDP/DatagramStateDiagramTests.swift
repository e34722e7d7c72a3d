import Foundation
import XCTest

/// The UDP engine's state diagrams in docs/architecture.md (each a `stateDiagram-v2` after a
/// `<!-- state-diagram: DatagramState.X in FILE -->` marker) name exactly the cases of the enum they draw,
/// read from its source.
final class DatagramStateDiagramTests: XCTestCase {
    static let package = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testEachDiagramNamesExactlyTheCasesOfItsEnum() throws {
        let doc = try String(contentsOf: Self.package.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let diagrams = Self.diagrams(in: doc).filter { $0.type.hasPrefix("DatagramState.") }
        XCTAssertEqual(diagrams.map(\.type).sorted(),
                       ["DatagramState.Ending", "DatagramState.Lifecycle", "DatagramState.Receiving", "DatagramState.SendWait"])
        for diagram in diagrams {
            let source = try String(contentsOf: Self.package.appendingPathComponent(diagram.file), encoding: .utf8)
            let enumName = String(diagram.type.split(separator: ".").last!)
            XCTAssertEqual(diagram.states, Self.cases(of: enumName, in: source), "\(diagram.type): diagram and code differ")
        }
    }

    /// The parsing finds what it looks for, and a diagram missing a case would fail.
    func testTheParsersSeeAMissingCase() {
        let doc = """
            <!-- state-diagram: DatagramState.Ending in Sources/X.swift -->
            ```mermaid
            stateDiagram-v2
                [*] --> none
                none --> afterSends: closeAfterSendsAsked
            ```
            """
        let source = """
            enum Ending: Equatable {
                case none
                /// a comment
                case afterSends
                case later(Int)
            }
            """
        let diagram = Self.diagrams(in: doc)
        XCTAssertEqual(diagram.map(\.file), ["Sources/X.swift"])
        XCTAssertEqual(diagram.first?.states, ["afterSends", "none"])
        XCTAssertEqual(Self.cases(of: "Ending", in: source), ["afterSends", "later", "none"])
    }

    struct Diagram {
        var type: String
        var file: String
        var states: Set<String>
    }

    static func diagrams(in doc: String) -> [Diagram] {
        var result: [Diagram] = []
        let lines = doc.components(separatedBy: "\n")
        for (i, line) in lines.enumerated() {
            guard let marker = line.range(of: #"<!-- state-diagram: (\S+) in (\S+) -->"#, options: .regularExpression) else { continue }
            let words = line[marker].split(separator: " ")
            var states = Set<String>()
            var j = i + 3  // the fence and `stateDiagram-v2`
            while j < lines.count, !lines[j].hasPrefix("```") {
                let transition = lines[j].split(separator: ":")[0]
                for part in transition.components(separatedBy: "-->") {
                    let name = part.trimmingCharacters(in: .whitespaces)
                    if !name.isEmpty && name != "[*]" { states.insert(name) }
                }
                j += 1
            }
            result.append(Diagram(type: String(words[2]), file: String(words[4]), states: states))
        }
        return result
    }

    /// The case names of `enum name` in `source` (the first such enum; cases one per line).
    static func cases(of name: String, in source: String) -> Set<String> {
        var names = Set<String>()
        var inside = false
        for line in source.components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if !inside {
                inside = trimmed.hasPrefix("enum \(name):") || trimmed.hasPrefix("enum \(name) ")
                continue
            }
            if trimmed == "}" { break }
            if trimmed.hasPrefix("case "), let word = trimmed.dropFirst(5).split(whereSeparator: { !$0.isLetter && !$0.isNumber }).first {
                names.insert(String(word))
            }
        }
        return names
    }
}
