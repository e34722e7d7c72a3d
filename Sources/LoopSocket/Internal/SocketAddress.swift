import CEpollShim
import EpollLoop
import FoundationEssentials
import Glibc

/// An IPv4, IPv6 or Unix-domain socket address, stored as the kernel's `sockaddr_storage`.
struct SocketAddress: Sendable {
    private(set) var storage = sockaddr_storage()
    private(set) var length: socklen_t = 0

    init() {}

    /// From raw `sockaddr` bytes (as GCDAsyncSocket's `NSData` addresses hold them); `nil` if malformed.
    init?(bytes: Data) {
        guard bytes.count >= MemoryLayout<sa_family_t>.size, bytes.count <= MemoryLayout<sockaddr_storage>.size else {
            return nil
        }
        withUnsafeMutableBytes(of: &storage) { raw in _ = bytes.copyBytes(to: raw) }
        length = socklen_t(bytes.count)
        switch Int32(storage.ss_family) {
        case AF_INET: guard bytes.count >= MemoryLayout<sockaddr_in>.size else { return nil }
        case AF_INET6: guard bytes.count >= MemoryLayout<sockaddr_in6>.size else { return nil }
        case AF_UNIX: break
        default: return nil
        }
    }

    /// A numeric IPv4 or IPv6 address (`"127.0.0.1"`, `"::1"`), or `nil` if `host` is not one.
    init?(numericHost host: String, port: UInt16) {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr = v4
            self.init(sin)
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            sin6.sin6_addr = v6
            self.init(sin6)
            return
        }
        return nil
    }

    /// The wildcard address of a family.
    static func any(family: Int32, port: UInt16) -> SocketAddress {
        family == AF_INET6 ? SocketAddress(numericHost: "::", port: port)! : SocketAddress(numericHost: "0.0.0.0", port: port)!
    }

    init(_ sin: sockaddr_in) {
        withUnsafeMutableBytes(of: &storage) { raw in
            withUnsafeBytes(of: sin) { raw.copyMemory(from: $0) }
        }
        length = socklen_t(MemoryLayout<sockaddr_in>.size)
    }

    init(_ sin6: sockaddr_in6) {
        withUnsafeMutableBytes(of: &storage) { raw in
            withUnsafeBytes(of: sin6) { raw.copyMemory(from: $0) }
        }
        length = socklen_t(MemoryLayout<sockaddr_in6>.size)
    }

    /// A Unix-domain address; `nil` if the path does not fit `sun_path` (107 bytes and a NUL).
    init?(unixPath path: String) {
        var sun = sockaddr_un()
        sun.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: sun.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &sun.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        withUnsafeMutableBytes(of: &storage) { raw in
            withUnsafeBytes(of: sun) { raw.copyMemory(from: $0) }
        }
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
    }

    /// Reads the local (`peer == false`) or remote address of a socket.
    static func of(fd: Int32, peer: Bool) -> SocketAddress? {
        var address = SocketAddress()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &address.storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa -> Bool in
                do {
                    if peer { try Syscall.peerAddress(fd, sa, &length) } else { try Syscall.localAddress(fd, sa, &length) }
                    return true
                } catch { return false }
            }
        }
        guard ok else { return nil }
        address.length = length
        return address
    }

    var family: Int32 { Int32(storage.ss_family) }
    var isIPv4: Bool { family == AF_INET }
    var isIPv6: Bool { family == AF_INET6 }
    var isUnix: Bool { family == AF_UNIX }

    /// The port of an IP address (0 for Unix addresses).
    var port: UInt16 {
        get {
            withUnsafeBytes(of: storage) { raw in
                switch family {
                case AF_INET: return UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
                case AF_INET6: return UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
                default: return 0
                }
            }
        }
        set {
            let family = self.family
            withUnsafeMutableBytes(of: &storage) { raw in
                switch family {
                case AF_INET: raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_port = newValue.bigEndian
                case AF_INET6: raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_port = newValue.bigEndian
                default: break
                }
            }
        }
    }

    /// The numeric host (`"127.0.0.1"`, `"::1"`), or `nil` for Unix addresses.
    var host: String? {
        withUnsafeBytes(of: storage) { raw -> String? in
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            switch family {
            case AF_INET:
                var addr = raw.load(as: sockaddr_in.self).sin_addr
                guard inet_ntop(AF_INET, &addr, &text, socklen_t(text.count)) != nil else { return nil }
            case AF_INET6:
                var addr = raw.load(as: sockaddr_in6.self).sin6_addr
                guard inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count)) != nil else { return nil }
            default:
                return nil
            }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// The path of a Unix-domain address.
    var unixPath: String? {
        guard isUnix else { return nil }
        return withUnsafeBytes(of: storage) { raw -> String in
            let pathBytes = raw.dropFirst(MemoryLayout<sa_family_t>.size).prefix(Int(length) - MemoryLayout<sa_family_t>.size)
            return String(decoding: pathBytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// The raw `sockaddr` bytes, as GCDAsyncSocket's `connectedAddress`/`localAddress` return them.
    var data: Data {
        withUnsafeBytes(of: storage) { Data($0.prefix(Int(length))) }
    }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(SyscallError) -> R) throws(SyscallError) -> R {
        var copy = storage
        return try withUnsafePointer(to: &copy) { pointer throws(SyscallError) -> R in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(SyscallError) -> R in
                try body(sa, length)
            }
        }
    }
}
