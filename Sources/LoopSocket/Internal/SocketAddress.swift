import CEpollShim
import EpollLoop
import FoundationEssentials
import Glibc

/// An IPv4, IPv6 or Unix-domain socket address.
///
/// Kept compact (32 bytes: the kernel's `sockaddr_in6` at most, or a path) because every connection holds
/// two of them; the `sockaddr` the kernel wants is built on the stack when a call needs it.
struct SocketAddress: Sendable {
    enum Storage: Sendable {
        case v4(sockaddr_in)
        case v6(sockaddr_in6)
        case unix(String)
    }

    private(set) var storage: Storage

    init(_ sin: sockaddr_in) { storage = .v4(sin) }

    init(_ sin6: sockaddr_in6) { storage = .v6(sin6) }

    /// From raw `sockaddr` bytes (as GCDAsyncSocket's `NSData` addresses hold them); `nil` if malformed.
    init?(bytes: Data) {
        // withUnsafeBytes, not `copyBytes(to:)`: that one is generic over the destination and, unspecialized
        // across the module boundary, instantiated generic metadata at run time on every call (half of
        // udp-echo-server's instructions, which parses each sender's address to reply to it).
        guard let address = bytes.withUnsafeBytes({ SocketAddress(raw: $0) }) else { return nil }
        self = address
    }

    /// From raw `sockaddr` bytes; `nil` if malformed. IPv4 and IPv6 are read in place (the per-datagram
    /// path); other families go through a `sockaddr_storage`.
    init?(raw bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= MemoryLayout<sa_family_t>.size, bytes.count <= MemoryLayout<sockaddr_storage>.size else {
            return nil
        }
        switch Int32(bytes.loadUnaligned(as: sa_family_t.self)) {
        case AF_INET where bytes.count >= MemoryLayout<sockaddr_in>.size:
            self.init(bytes.loadUnaligned(as: sockaddr_in.self))
        case AF_INET6 where bytes.count >= MemoryLayout<sockaddr_in6>.size:
            self.init(bytes.loadUnaligned(as: sockaddr_in6.self))
        default:
            var raw = sockaddr_storage()
            withUnsafeMutableBytes(of: &raw) { $0.copyMemory(from: bytes) }
            self.init(storage: raw, length: socklen_t(bytes.count))
        }
    }

    /// From what the kernel filled in (`accept`, `getsockname`, `getpeername`).
    init?(storage raw: sockaddr_storage, length: socklen_t) {
        switch Int32(raw.ss_family) {
        case AF_INET:
            guard Int(length) >= MemoryLayout<sockaddr_in>.size else { return nil }
            storage = .v4(withUnsafeBytes(of: raw) { $0.load(as: sockaddr_in.self) })
        case AF_INET6:
            guard Int(length) >= MemoryLayout<sockaddr_in6>.size else { return nil }
            storage = .v6(withUnsafeBytes(of: raw) { $0.load(as: sockaddr_in6.self) })
        case AF_UNIX:
            let pathBytes = withUnsafeBytes(of: raw) { raw in
                Array(raw.dropFirst(MemoryLayout<sa_family_t>.size).prefix(max(0, Int(length) - MemoryLayout<sa_family_t>.size)))
            }
            storage = .unix(String(decoding: pathBytes.prefix { $0 != 0 }, as: UTF8.self))
        default:
            return nil
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

    /// A Unix-domain address; `nil` if the path does not fit `sun_path` (107 bytes and a NUL).
    init?(unixPath path: String) {
        let count = path.utf8.count
        guard count > 0, count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else { return nil }
        storage = .unix(path)
    }

    /// Reads the local (`peer == false`) or remote address of a socket.
    static func of(fd: Int32, peer: Bool) -> SocketAddress? {
        var raw = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &raw) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa -> Bool in
                do {
                    if peer { try Syscall.peerAddress(fd, sa, &length) } else { try Syscall.localAddress(fd, sa, &length) }
                    return true
                } catch { return false }
            }
        }
        return ok ? SocketAddress(storage: raw, length: length) : nil
    }

    var family: Int32 {
        switch storage {
        case .v4: return AF_INET
        case .v6: return AF_INET6
        case .unix: return AF_UNIX
        }
    }

    var isIPv4: Bool { family == AF_INET }
    var isIPv6: Bool { family == AF_INET6 }
    var isUnix: Bool { family == AF_UNIX }

    /// The port of an IP address (0 for Unix addresses).
    var port: UInt16 {
        get {
            switch storage {
            case .v4(let sin): return UInt16(bigEndian: sin.sin_port)
            case .v6(let sin6): return UInt16(bigEndian: sin6.sin6_port)
            case .unix: return 0
            }
        }
        set {
            switch storage {
            case .v4(var sin):
                sin.sin_port = newValue.bigEndian
                storage = .v4(sin)
            case .v6(var sin6):
                sin6.sin6_port = newValue.bigEndian
                storage = .v6(sin6)
            case .unix:
                break
            }
        }
    }

    /// The numeric host (`"127.0.0.1"`, `"::1"`), or `nil` for Unix addresses.
    var host: String? {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch storage {
        case .v4(var sin):
            guard inet_ntop(AF_INET, &sin.sin_addr, &text, socklen_t(text.count)) != nil else { return nil }
        case .v6(var sin6):
            guard inet_ntop(AF_INET6, &sin6.sin6_addr, &text, socklen_t(text.count)) != nil else { return nil }
        case .unix:
            return nil
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The path of a Unix-domain address.
    var unixPath: String? {
        if case .unix(let path) = storage { return path }
        return nil
    }

    /// The raw `sockaddr` bytes, as GCDAsyncSocket's `connectedAddress`/`localAddress` return them.
    var data: Data {
        withRawSockAddr { raw, length in Data(UnsafeRawBufferPointer(start: raw, count: Int(length))) }
    }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(SyscallError) -> R) throws(SyscallError) -> R {
        var raw = sockaddr_storage()
        let length = fill(&raw)
        return try withUnsafePointer(to: &raw) { pointer throws(SyscallError) -> R in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(SyscallError) -> R in
                try body(sa, length)
            }
        }
    }

    private func withRawSockAddr<R>(_ body: (UnsafeRawPointer, socklen_t) -> R) -> R {
        var raw = sockaddr_storage()
        let length = fill(&raw)
        return withUnsafeBytes(of: &raw) { body($0.baseAddress!, length) }
    }

    /// Writes the kernel's form of the address into `raw`; returns its length.
    func fill(_ raw: inout sockaddr_storage) -> socklen_t {
        withUnsafeMutableBytes(of: &raw) { bytes -> socklen_t in
            switch storage {
            case .v4(let sin):
                withUnsafeBytes(of: sin) { bytes.copyMemory(from: $0) }
                return socklen_t(MemoryLayout<sockaddr_in>.size)
            case .v6(let sin6):
                withUnsafeBytes(of: sin6) { bytes.copyMemory(from: $0) }
                return socklen_t(MemoryLayout<sockaddr_in6>.size)
            case .unix(let path):
                var sun = sockaddr_un()
                sun.sun_family = sa_family_t(AF_UNIX)
                let utf8 = Array(path.utf8)
                withUnsafeMutableBytes(of: &sun.sun_path) { $0.copyBytes(from: utf8.prefix($0.count - 1)) }
                withUnsafeBytes(of: sun) { bytes.copyMemory(from: $0) }
                return socklen_t(MemoryLayout<sa_family_t>.size + min(utf8.count, MemoryLayout.size(ofValue: sun.sun_path) - 1) + 1)
            }
        }
    }
}
