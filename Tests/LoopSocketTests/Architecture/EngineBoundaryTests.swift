import Foundation
import XCTest

/// The engines (Sources/LoopSocket/Engine, UDP/Engine) and what they share with the faces (Internal/) know
/// no face, and the faces (the `GCDAsyncSocket` files and Async/) change the engine's state only through the
/// engine's methods. Read from the source, code only.
final class EngineBoundaryTests: XCTestCase {
    /// A face's name: `GCDAsyncSocket…` and `GCDAsyncUdpSocket…` (their errors, error domains, delegates,
    /// filter blocks, …), `AsyncSocket…`, `AsyncUDPSocket…` (their handlers), `AsyncListener…`.
    static let faceType = #"\b(GCDAsyncSocket|GCDAsyncUdpSocket|AsyncSocket|AsyncUDPSocket|AsyncListener)\w*\b"#

    /// The folders that must name no face, every file in them and below.
    static let engineFolders = ["Engine", "UDP/Engine", "Internal"]

    func testNoEngineFileNamesAFaceType() throws {
        for folder in Self.engineFolders {
            let files = try SourceScanner.filesRecursively(in: folder)
            XCTAssertGreaterThan(files.count, 5, "the files of \(folder) were not found")
            let found = try SourceScanner.matches(of: Self.faceType, in: files)
            XCTAssertEqual(found, [], "\(folder) names a face")
        }
    }

    /// The engine's stored state: the loop-confined fields of `ConnectionEngine` and the fields of its
    /// shared state and settings, read from their declarations (private ones cannot be reached anyway).
    static func engineStateNames() throws -> [String] {
        let engine = SourceScanner.loopSocketSources.appendingPathComponent("Engine")
        var names: [String] = []
        let fields = try NSRegularExpression(pattern: #"^    @exclusivity\(unchecked\) var (\w+)"#)
        let shared = try NSRegularExpression(pattern: #"^        (?:weak )?var (\w+)"#)
        for (file, regex) in [("ConnectionEngine.swift", fields), ("ConnectionEngine+Shared.swift", shared)] {
            let lines = SourceScanner.codeLines(of: try String(contentsOf: engine.appendingPathComponent(file), encoding: .utf8))
            for line in lines {
                let range = NSRange(line.startIndex..., in: line)
                if let match = regex.firstMatch(in: line, range: range), let name = Range(match.range(at: 1), in: line) {
                    names.append(String(line[name]))
                }
            }
        }
        return names
    }

    /// An assignment to, or a mutating call on, one of `names` (not a declaration of a local of that name).
    static func assignmentPattern(_ names: [String]) -> String {
        let alternatives = names.joined(separator: "|")
        return #"(^|[^\w.]|\$0\.|state\.|self\.)("# + alternatives + #")(\.\w+)*\s*(=(?!=)|\+=|-=|&\+=|&-=|\|=)"#
            + #"|(^|[^\w.])("# + alternatives + #")\.(insert|remove|append|formUnion|subtract)\("#
    }

    func testNoFaceFileAssignsEngineState() throws {
        let names = try Self.engineStateNames()
        for expected in ["connectionState", "config", "reads", "fd", "status", "generation", "configuration"] {
            XCTAssertTrue(names.contains(expected), "the engine's field \(expected) was not found: \(names)")
        }
        let faces = try SourceScanner.files(in: "", where: { $0.hasPrefix("GCDAsyncSocket") })
            + SourceScanner.files(in: "Async")
        XCTAssertGreaterThan(faces.count, 15, "the face files were not found")
        let found = try SourceScanner.matches(of: Self.assignmentPattern(names), in: faces) { line in
            line.range(of: #"\b(let|var)\s+\w+\s*(:[^=]*)?="#, options: .regularExpression) != nil
                && line.range(of: #"^\s*(let|var)\s"#, options: .regularExpression) != nil
        }
        XCTAssertEqual(found, [], "a face file assigns the engine's state")
    }

    /// The scans above can fail: they find what they look for in code, and not in comments or strings.
    func testTheScansFindWhatTheyLookFor() throws {
        let sample = """
            // GCDAsyncSocketError in a comment
            let text = "AsyncSocket in a string \\(GCDAsyncSocketError.self)"; socket.status = 1
            lifecycle = .idle
            $0.status = .connected
            readiness.insert(.readable)
            let fd = 3
            """
        let lines = SourceScanner.codeLines(of: sample)
        let face = try NSRegularExpression(pattern: Self.faceType)
        let faceHits = lines.indices.filter { face.firstMatch(in: lines[$0], range: NSRange(lines[$0].startIndex..., in: lines[$0])) != nil }
        XCTAssertEqual(faceHits, [1], "only the interpolation names a type: \(lines)")
        let faceNames = ["GCDAsyncSocketError", "GCDAsyncUdpSocketError", "GCDAsyncUdpSocketDelegate", "GCDAsyncSocketDelegate",
                         "GCDAsyncUdpSocketSendFilterBlock", "GCDAsyncUdpSocketErrorDomain", "AsyncSocket", "AsyncUDPSocket",
                         "AsyncUDPSocketHandler", "AsyncListener"]
        for name in faceNames {
            let line = "let x: \(name)? = nil"
            XCTAssertNotNil(face.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)), "\(name) is a face's name")
        }
        for name in ["DatagramError", "ConnectionError", "ResolverError", "TLSError", "UDPAsyncSocketX"] {
            let line = "let x: \(name)? = nil"
            XCTAssertNil(face.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)), "\(name) is not a face's name")
        }
        let nested = try SourceScanner.filesRecursively(in: "UDP")
        XCTAssertTrue(nested.contains { $0.path.hasSuffix("UDP/Engine/DatagramEngine.swift") }, "the walk goes into folders")
        let assign = try NSRegularExpression(pattern: Self.assignmentPattern(["lifecycle", "status", "readiness", "fd"]))
        let assignHits = lines.indices.filter { assign.firstMatch(in: lines[$0], range: NSRange(lines[$0].startIndex..., in: lines[$0])) != nil }
        XCTAssertEqual(assignHits, [2, 3, 4, 5])
    }
}
