import Glibc

/// Reading and writing the files loadtest is asked for, with one plain line when that fails ("cannot write
/// out/r.json: No such file or directory") instead of a Foundation error dump, and a check of output paths
/// before a run, so a typo does not cost a whole run.
package enum FileIO {
    /// What went wrong with a file, in one line.
    package struct Failure: Error, CustomStringConvertible, Sendable {
        /// The sentence.
        package let description: String
    }

    /// The whole file at `path`.
    package static func read(_ path: String) throws(Failure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("cannot read", path) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw failure("cannot read", path) }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }

    /// Writes `bytes` to `path` ("-": standard output), replacing what was there.
    package static func write(_ bytes: some Collection<UInt8>, to path: String) throws(Failure) {
        let fd = path == "-" ? 1 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("cannot write", path) }
        defer { if fd != 1 { close(fd) } }
        let array = Array(bytes)
        var done = 0
        while done < array.count {
            let n = array.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw failure("cannot write", path) }
            done += n
        }
    }

    /// Why `path` could not be written, or nil if it can (checked without creating or changing it): the
    /// directory must exist and be writable, and an existing file must be a writable regular file.
    package static func problemWriting(_ path: String) -> String? {
        if path == "-" { return nil }
        var info = stat()
        if stat(path, &info) == 0 {
            if info.st_mode & S_IFMT == S_IFDIR { return "cannot write \(path): it is a directory" }
            return access(path, W_OK) == 0 ? nil : "cannot write \(path): \(String(cString: strerror(errno)))"
        }
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let dir = directory.isEmpty ? "/" : directory
        guard stat(dir, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            return "cannot write \(path): there is no directory \(dir)"
        }
        return access(dir, W_OK) == 0 ? nil : "cannot write \(path): \(String(cString: strerror(errno))) (directory \(dir))"
    }

    private static func failure(_ what: String, _ path: String) -> Failure {
        Failure(description: "\(what) \(path): \(String(cString: strerror(errno)))")
    }
}
