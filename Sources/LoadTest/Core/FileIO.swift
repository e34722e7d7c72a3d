import Glibc

/// Reading and writing the files loadtest is asked for, with one plain line when that fails ("cannot write
/// out/r.json: No such file or directory") instead of a Foundation error dump, and a check of output paths
/// before a run (by opening them), so a typo or a place that takes no files does not cost a whole run.
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

    /// Why `path` could not be written, or nil if it can. The file is opened for writing (and created, then
    /// removed again, when it did not exist): permission bits alone do not tell, since root passes `access(2)`
    /// where /proc, /sys or a read-only mount refuse the file itself. An existing file keeps its contents.
    package static func problemWriting(_ path: String) -> String? {
        if path == "-" { return nil }
        var info = stat()
        let existed = stat(path, &info) == 0
        if existed && info.st_mode & S_IFMT == S_IFDIR { return "cannot write \(path): it is a directory" }
        // O_NONBLOCK: a FIFO without a reader answers ENXIO at once instead of blocking (and will do for output).
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0o644)
        guard fd >= 0 else {
            let reason = errno
            if reason == ENXIO { return nil }
            let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
            let dir = directory.isEmpty ? "/" : directory
            if reason == ENOENT && !(stat(dir, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR) {
                return "cannot write \(path): there is no directory \(dir)"
            }
            return "cannot write \(path): \(String(cString: strerror(reason)))"
        }
        close(fd)
        if !existed { unlink(path) }
        return nil
    }

    private static func failure(_ what: String, _ path: String) -> Failure {
        Failure(description: "\(what) \(path): \(String(cString: strerror(errno)))")
    }
}
