import Glibc

/// The addresses of the machine's network interfaces, for the calls that take an interface by name (a TCP
/// listen, a UDP bind or multicast interface).
extension SocketAddress {
    /// The IPv4 and IPv6 addresses of a network interface, by name (`getifaddrs`).
    static func interfaceAddresses(_ name: String, port: UInt16) -> [SocketAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var result: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard String(cString: entry.pointee.ifa_name) == name, let sa = entry.pointee.ifa_addr else { continue }
            switch Int32(sa.pointee.sa_family) {
            case AF_INET:
                var address = SocketAddress(sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee })
                address.port = port
                result.append(address)
            case AF_INET6:
                var address = SocketAddress(sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee })
                address.port = port
                result.append(address)
            default:
                break
            }
        }
        return result
    }
}
