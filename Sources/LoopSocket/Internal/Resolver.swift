import EpollLoop
import Glibc

/// Name resolution with `getaddrinfo`, which blocks: it runs on a Dispatch global queue, never on a loop.
enum Resolver {
    /// Every TCP address of `host` (in the resolver's order), or an error naming the host.
    static func resolve(_ host: String, port: UInt16) -> Result<[SocketAddress], ResolverError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            return .failure(ResolverError(host: host, reason: .lookupFailed(status)))
        }
        defer { freeaddrinfo(list) }
        var result: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ai_next }
            guard let sa = entry.pointee.ai_addr else { continue }
            switch entry.pointee.ai_family {
            case AF_INET:
                result.append(SocketAddress(sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }))
            case AF_INET6:
                result.append(SocketAddress(sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }))
            default:
                continue
            }
        }
        return result.isEmpty
            ? .failure(ResolverError(host: host, reason: .noAddress))
            : .success(result)
    }

    /// The addresses of `host` that need no lookup: numeric addresses and `localhost`. `nil` otherwise.
    static func immediate(_ host: String, port: UInt16) -> [SocketAddress]? {
        if let numeric = SocketAddress(numericHost: host, port: port) { return [numeric] }
        if host == "localhost" || host == "localhost." {
            return [SocketAddress(numericHost: "::1", port: port)!, SocketAddress(numericHost: "127.0.0.1", port: port)!]
        }
        return nil
    }

    /// RFC 8305 ordering: keep only enabled families, then alternate families starting with the preferred one.
    static func happyEyeballsOrder(_ addresses: [SocketAddress], ipv4: Bool, ipv6: Bool, preferIPv4: Bool) -> [SocketAddress] {
        let v4 = ipv4 ? addresses.filter(\.isIPv4) : []
        let v6 = ipv6 ? addresses.filter(\.isIPv6) : []
        let (first, second) = preferIPv4 ? (v4, v6) : (v6, v4)
        var ordered: [SocketAddress] = []
        ordered.reserveCapacity(first.count + second.count)
        for i in 0..<max(first.count, second.count) {
            if i < first.count { ordered.append(first[i]) }
            if i < second.count { ordered.append(second[i]) }
        }
        return ordered
    }
}
