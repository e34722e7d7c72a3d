import FoundationEssentials

/// Replays saved inputs through a target: the corpus and the regression inputs, from the `fuzz` executable
/// and from the tests.
package enum FuzzReplay {
    /// The files named, and the files in the directories named (not recursively, sorted), skipping dot files.
    package static func files(in paths: [String]) -> [String] {
        var files: [String] = []
        for path in paths {
            var isDirectory = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                files.append(path)  // reported as unreadable by `replay`
                continue
            }
            if isDirectory {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                files += names.filter { !$0.hasPrefix(".") }.sorted().map { path + "/" + $0 }
            } else {
                files.append(path)
            }
        }
        return files
    }

    /// Runs the file at `path` through `target`: nil if every property held, else why not.
    package static func replay(_ path: String, through target: FuzzTarget) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return "cannot read \(path)" }
        return replay(Array(data), through: target)
    }

    /// Runs `bytes` through `target`: nil if every property held, else why not.
    package static func replay(_ bytes: [UInt8], through target: FuzzTarget) -> String? {
        bytes.withUnsafeBytes { raw in
            do throws(PropertyFailure) {
                try target.run(raw)
                return nil
            } catch {
                return error.description
            }
        }
    }
}
