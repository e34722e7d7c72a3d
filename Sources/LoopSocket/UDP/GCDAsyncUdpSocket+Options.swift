import CEpollShim
import EpollLoop
import FoundationEssentials
import Glibc

/// Broadcast, port reuse and multicast. Each call here throws `badConfigError`, doing nothing, if waiting for the socket's loop would deadlock (see ``GCDAsyncUdpSocket``).
extension GCDAsyncUdpSocket {
    /// Allows sending to broadcast addresses (`SO_BROADCAST`, IPv4 only: IPv6 has no broadcast). Without
    /// it, a send to a broadcast address fails with `EACCES`.
    ///
    /// - Throws: `badConfigError` if IPv4 is disabled; `otherError` if `setsockopt` fails.
    public func enableBroadcast(_ flag: Bool) throws {
        try throwingOnLoop("enableBroadcast(_:)") { () throws(GCDAsyncUdpSocketError) in
            try createChannelsIfNeeded()
            guard let channel4 else {
                throw GCDAsyncUdpSocketError(.badConfigError, "Broadcast is IPv4 only, and the socket has no IPv4 descriptor")
            }
            try setOption(channel4, level: SOL_SOCKET, name: CEPOLL_SO_BROADCAST, value: flag ? 1 : 0)
        }
    }

    /// Lets other sockets bind the same address and port (`SO_REUSEPORT`; call before binding, on each of
    /// them). The kernel then spreads incoming datagrams over them by flow.
    public func enableReusePort(_ flag: Bool) throws {
        try throwingOnLoop("enableReusePort(_:)") { () throws(GCDAsyncUdpSocketError) in
            try createChannelsIfNeeded()
            for channel in [channel4, channel6].compactMap({ $0 }) {
                try setOption(channel, level: SOL_SOCKET, name: CEPOLL_SO_REUSEPORT, value: flag ? 1 : 0)
            }
        }
    }

    /// Joins a multicast group (a numeric IPv4 or IPv6 address) on the default interface.
    ///
    /// - Throws: `badConfigError` if the socket is not bound or is connected; `badParamError` for a group
    ///   or interface that is not valid, or of a family the socket has no descriptor for.
    public func joinMulticastGroup(_ group: String) throws {
        try joinMulticastGroup(group, onInterface: nil)
    }

    /// Joins a multicast group on `interface` (a name such as `"lo"`, or one of its addresses). As with
    /// GCDAsyncUdpSocket, the descriptor of the other family is closed.
    public func joinMulticastGroup(_ group: String, onInterface interface: String?) throws {
        try multicast(join: true, group, interface)
    }

    /// Leaves a multicast group joined on the default interface.
    public func leaveMulticastGroup(_ group: String) throws {
        try leaveMulticastGroup(group, onInterface: nil)
    }

    /// Leaves a multicast group joined on `interface`.
    public func leaveMulticastGroup(_ group: String, onInterface interface: String?) throws {
        try multicast(join: false, group, interface)
    }

    /// The interface IPv4 multicast datagrams leave from (`IP_MULTICAST_IF`): a name or an IPv4 address.
    public func sendIPv4Multicast(onInterface interface: String) throws {
        try throwingOnLoop("sendIPv4Multicast(onInterface:)") { () throws(GCDAsyncUdpSocketError) in
            try createChannelsIfNeeded()
            guard let channel4 else { throw GCDAsyncUdpSocketError(.badConfigError, "The socket has no IPv4 descriptor") }
            guard let address = Self.interfaceAddress(interface, family: AF_INET), case .v4(let sin) = address.storage else {
                throw GCDAsyncUdpSocketError(.badParamError, "Unknown interface. Specify valid interface by name (e.g. \"lo\") or IP address.")
            }
            try setOption(channel4, level: Int32(IPPROTO_IP), name: CEPOLL_IP_MULTICAST_IF, sin.sin_addr)
        }
    }

    /// The interface IPv6 multicast datagrams leave from (`IPV6_MULTICAST_IF`): a name or an IPv6 address.
    public func sendIPv6Multicast(onInterface interface: String) throws {
        try throwingOnLoop("sendIPv6Multicast(onInterface:)") { () throws(GCDAsyncUdpSocketError) in
            try createChannelsIfNeeded()
            guard let channel6 else { throw GCDAsyncUdpSocketError(.badConfigError, "The socket has no IPv6 descriptor") }
            guard let index = Self.interfaceIndex(interface) else {
                throw GCDAsyncUdpSocketError(.badParamError, "Unknown interface. Specify valid interface by name (e.g. \"lo\") or IP address.")
            }
            try setOption(channel6, level: Int32(IPPROTO_IPV6), name: CEPOLL_IPV6_MULTICAST_IF, Int32(bitPattern: index))
        }
    }

    private func multicast(join: Bool, _ group: String, _ interface: String?) throws {
        try throwingOnLoop(join ? "joinMulticastGroup(_:onInterface:)" : "leaveMulticastGroup(_:onInterface:)") { () throws(GCDAsyncUdpSocketError) in
            if let refusal = state.multicastAsked() { throw GCDAsyncUdpSocketError(refusal) }
            guard let groupAddress = SocketAddress(numericHost: group, port: 0) else {
                throw GCDAsyncUdpSocketError(.badParamError, "Unknown group. Specify valid group IP address.")
            }
            let unknownInterface = GCDAsyncUdpSocketError(.badParamError,
                "Unknown interface. Specify valid interface by name (e.g. \"lo\") or IP address.")
            switch groupAddress.storage {
            case .v4(let groupSin):
                guard let channel4 else {
                    throw GCDAsyncUdpSocketError(.badParamError, "Socket, group, and interface do not have matching IP versions")
                }
                var request = ip_mreq()
                request.imr_multiaddr = groupSin.sin_addr
                if let interface {
                    guard let address = Self.interfaceAddress(interface, family: AF_INET), case .v4(let sin) = address.storage else {
                        throw unknownInterface
                    }
                    request.imr_interface = sin.sin_addr
                }
                try setOption(channel4, level: Int32(IPPROTO_IP), name: join ? CEPOLL_IP_ADD_MEMBERSHIP : CEPOLL_IP_DROP_MEMBERSHIP, request)
                closeChannel(family: AF_INET6)
            case .v6(let groupSin6):
                guard let channel6 else {
                    throw GCDAsyncUdpSocketError(.badParamError, "Socket, group, and interface do not have matching IP versions")
                }
                var request = ipv6_mreq()
                request.ipv6mr_multiaddr = groupSin6.sin6_addr
                if let interface {
                    guard let index = Self.interfaceIndex(interface) else { throw unknownInterface }
                    request.ipv6mr_interface = index
                }
                try setOption(channel6, level: Int32(IPPROTO_IPV6), name: join ? CEPOLL_IPV6_JOIN_GROUP : CEPOLL_IPV6_LEAVE_GROUP, request)
                closeChannel(family: AF_INET)
            case .unix:
                throw GCDAsyncUdpSocketError(.badParamError, "Unknown group. Specify valid group IP address.")
            }
        }
    }

    private func setOption<Value>(_ channel: DatagramChannel, level: Int32, name: Int32, _ value: Value) throws(GCDAsyncUdpSocketError) {
        do {
            try Syscall.setOption(channel.fd, level: level, name: name, value)
        } catch {
            throw GCDAsyncUdpSocketError(error)
        }
    }

    private func setOption(_ channel: DatagramChannel, level: Int32, name: Int32, value: Int32) throws(GCDAsyncUdpSocketError) {
        try setOption(channel, level: level, name: name, value)
    }

    /// An address of `family` for an interface description: a numeric address, `"localhost"`, or a name.
    static func interfaceAddress(_ interface: String, family: Int32) -> SocketAddress? {
        if let numeric = SocketAddress(numericHost: interface, port: 0) { return numeric.family == family ? numeric : nil }
        if interface == "localhost" || interface == "loopback" {
            return SocketAddress(numericHost: family == AF_INET ? "127.0.0.1" : "::1", port: 0)
        }
        return GCDAsyncSocket.interfaceAddresses(interface, port: 0).first { $0.family == family }
    }

    /// The index of an interface given by name or by one of its addresses.
    static func interfaceIndex(_ interface: String) -> UInt32? {
        let byName = if_nametoindex(interface)
        if byName != 0 { return byName }
        guard let address = SocketAddress(numericHost: interface, port: 0) ?? (interface == "localhost" ? SocketAddress(numericHost: "::1", port: 0) : nil) else {
            return nil
        }
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let sa = entry.pointee.ifa_addr, Int32(sa.pointee.sa_family) == address.family else { continue }
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.copyMemory(from: UnsafeRawBufferPointer(start: sa, count: address.isIPv4 ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size))
            }
            if let candidate = SocketAddress(storage: storage, length: socklen_t(MemoryLayout<sockaddr_storage>.size)), candidate.host == address.host {
                return if_nametoindex(entry.pointee.ifa_name)
            }
        }
        return nil
    }
}
