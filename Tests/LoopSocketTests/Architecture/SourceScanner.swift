import Foundation

/// Reads the package's Swift sources for the architecture tests: files by folder, with comments and string
/// literals blanked out, so that a test looks at code only.
enum SourceScanner {
    /// The package's `Sources/LoopSocket` folder, found from this file's path.
    static var loopSocketSources: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // Architecture
            .deletingLastPathComponent()  // LoopSocketTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // the package
            .appendingPathComponent("Sources/LoopSocket")
    }

    /// The `.swift` files directly in `folder` (relative to `Sources/LoopSocket`), whose names pass `include`.
    static func files(in folder: String, where include: (String) -> Bool = { _ in true }) throws -> [URL] {
        let directory = folder.isEmpty ? loopSocketSources : loopSocketSources.appendingPathComponent(folder)
        return try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".swift") && include($0) }
            .sorted()
            .map { directory.appendingPathComponent($0) }
    }

    /// The `.swift` files in `folder` (relative to `Sources/LoopSocket`) and in every folder below it.
    static func filesRecursively(in folder: String) throws -> [URL] {
        let directory = loopSocketSources.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        return walker.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
            .sorted()
            .map { directory.appendingPathComponent($0) }
    }

    /// `source`'s lines with comments and the contents of string literals replaced by spaces (line numbers and
    /// columns kept). Enough of Swift's lexical rules for this code base: `//` and `/* */` comments, `"…"`
    /// strings with escapes and `\(…)` interpolations left as code, and `"""` blocks.
    static func codeLines(of source: String) -> [String] {
        var out: [Character] = []
        let chars = Array(source)
        var i = 0
        var inBlockComment = 0
        var inString = false
        var multiline = false
        var interpolationDepth: [Int] = []  // parenthesis depth at each open interpolation
        var parens = 0
        func blank(_ c: Character) -> Character { c == "\n" ? "\n" : " " }
        while i < chars.count {
            let c = chars[i]
            let next: Character? = i + 1 < chars.count ? chars[i + 1] : nil
            if inBlockComment > 0 {
                if c == "*" && next == "/" { inBlockComment -= 1; out += "  "; i += 2; continue }
                if c == "/" && next == "*" { inBlockComment += 1; out += "  "; i += 2; continue }
                out.append(blank(c)); i += 1; continue
            }
            if inString {
                if c == "\\" && next == "(" {
                    out += "\\("; i += 2; parens += 1; interpolationDepth.append(parens); inString = false; continue
                }
                if c == "\\" { out.append(" "); out.append(blank(next ?? " ")); i += 2; continue }
                if multiline, c == "\"", i + 2 < chars.count, chars[i + 1] == "\"", chars[i + 2] == "\"" {
                    out += "\"\"\""; i += 3; inString = false; continue
                }
                if !multiline && c == "\"" { out.append("\""); i += 1; inString = false; continue }
                out.append(blank(c)); i += 1; continue
            }
            if c == "/" && next == "/" {
                while i < chars.count && chars[i] != "\n" { out.append(" "); i += 1 }
                continue
            }
            if c == "/" && next == "*" { inBlockComment = 1; out += "  "; i += 2; continue }
            if c == "\"" {
                if i + 2 < chars.count && chars[i + 1] == "\"" && chars[i + 2] == "\"" {
                    out += "\"\"\""; i += 3; inString = true; multiline = true; continue
                }
                out.append("\""); i += 1; inString = true; multiline = false; continue
            }
            if c == "(" { parens += 1 }
            if c == ")" {
                if let depth = interpolationDepth.last, depth == parens {
                    interpolationDepth.removeLast(); parens -= 1; out.append(")"); i += 1; inString = true; continue
                }
                parens -= 1
            }
            out.append(c); i += 1
        }
        return String(out).components(separatedBy: "\n")
    }

    /// Every match of `pattern` in the code of `files`, as `File.swift:line: text`.
    static func matches(of pattern: String, in files: [URL], skip: (String) -> Bool = { _ in false }) throws -> [String] {
        let regex = try NSRegularExpression(pattern: pattern)
        var found: [String] = []
        for file in files {
            let lines = codeLines(of: try String(contentsOf: file, encoding: .utf8))
            for (index, line) in lines.enumerated() {
                let range = NSRange(line.startIndex..., in: line)
                if regex.firstMatch(in: line, range: range) != nil, !skip(line) {
                    found.append("\(file.lastPathComponent):\(index + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        return found
    }
}
