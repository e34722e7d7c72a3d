import Glibc

/// The process's open descriptors (`/proc/self/fd`), each with what it points at (`readlink`), leaving out
/// the directory stream used to list them. One implementation for every test target that checks that a
/// scenario closes each descriptor exactly once.
public func openDescriptors() -> [Int32: String] {
    guard let dir = opendir("/proc/self/fd") else { return [:] }
    defer { closedir(dir) }
    let own = dirfd(dir)
    var result: [Int32: String] = [:]
    // `d_name` is read through a pointer, only up to its terminating zero: an entry in the buffer `readdir`
    // fills is as long as its name needs, shorter than `struct dirent`, so copying the whole 256-byte field
    // (as loading `entry.pointee.d_name` does) reads past the entry, and for the last one past the buffer.
    let nameOffset = MemoryLayout<dirent>.offset(of: \.d_name)!
    while let entry = readdir(dir) {
        let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
        guard let fd = Int32(name), fd != own else { continue }
        var target = [CChar](repeating: 0, count: 512)
        let n = readlink("/proc/self/fd/\(name)", &target, target.count - 1)
        result[fd] = n > 0 ? String(decoding: target[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
    }
    return result
}
