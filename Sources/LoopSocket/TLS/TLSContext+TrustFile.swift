import Glibc

/// Which file a ``TLSConfiguration/TrustRoots/file(_:)`` path names now, so that the shared context built
/// from it is used only while the file is unchanged.
///
/// A context loads its trust roots once, so a context cached by path alone would keep trusting a CA removed
/// from the file until the process restarts. The key is the file's identity by `stat`: one system call per
/// lookup, where hashing the contents would read a whole bundle (a system one is about 200 KB) at every
/// `startTLS`. A file replaced (the atomic rename of `update-ca-certificates` and editors: another inode) or
/// rewritten in place (its size, modification and change times) gives another key, and the next connection
/// builds a context from what the file holds then. The change time is part of it because no tool can set
/// it: `touch -d`, `cp -p` and `rsync -t` put an old modification time back, never an old change time.
struct TrustFileIdentity: Hashable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: timespec
    let changed: timespec

    /// The identity of the file at `path`, or nil when it cannot be `stat`ed (loading it then fails with
    /// the reason).
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = info.st_mtim
        changed = info.st_ctim
    }

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.device == rhs.device && lhs.inode == rhs.inode && lhs.size == rhs.size
            && lhs.modified.tv_sec == rhs.modified.tv_sec && lhs.modified.tv_nsec == rhs.modified.tv_nsec
            && lhs.changed.tv_sec == rhs.changed.tv_sec && lhs.changed.tv_nsec == rhs.changed.tv_nsec
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(inode)
        hasher.combine(size)
        hasher.combine(changed.tv_sec)
        hasher.combine(changed.tv_nsec)
    }
}

extension TLSContext {
    /// The shared context cache's key: the settings that shape a context and, when its trust roots come
    /// from a file, that file's identity now.
    struct CacheKey: Hashable {
        let configuration: TLSConfiguration
        let trustFile: TrustFileIdentity?

        init(_ configuration: TLSConfiguration) {
            self.configuration = configuration
            if case .file(let path) = configuration.trustRoots {
                trustFile = TrustFileIdentity(path: path)
            } else {
                trustFile = nil
            }
        }
    }
}
