import CEpollShim
import EpollLoop
import FoundationEssentials
import Glibc

/// Socket options on the descriptors: broadcast, port reuse, multicast (the face's `+Options` calls these on
/// the loop).
extension DatagramEngine {
    /// Sets `SO_BROADCAST` on the IPv4 descriptor. Loop only.
    func setBroadcast(_ flag: Bool) throws(DatagramError) {
        try createChannelsIfNeeded()
        guard let channel4 else {
            throw .broadcastWithoutIPv4
        }
        try setOption(channel4, level: SOL_SOCKET, name: CEPOLL_SO_BROADCAST, value: flag ? 1 : 0)
    }

    /// Sets `SO_REUSEPORT` on every descriptor. Loop only.
    func setReusePort(_ flag: Bool) throws(DatagramError) {
        try createChannelsIfNeeded()
        for channel in [channel4, channel6].compactMap({ $0 }) {
            try setOption(channel, level: SOL_SOCKET, name: CEPOLL_SO_REUSEPORT, value: flag ? 1 : 0)
        }
    }

    /// Sets `IP_MULTICAST_IF`. Loop only.
    func setMulticastInterface4(_ interface: String) throws(DatagramError) {
        try createChannelsIfNeeded()
        guard let channel4 else { throw .noDescriptor(ipv4: true) }
        guard let address = Self.interfaceAddress(interface, family: AF_INET), case .v4(let sin) = address.storage else {
            throw .unknownInterface
        }
        try setOption(channel4, level: Int32(IPPROTO_IP), name: CEPOLL_IP_MULTICAST_IF, sin.sin_addr)
    }

    /// Sets `IPV6_MULTICAST_IF`. Loop only.
    func setMulticastInterface6(_ interface: String) throws(DatagramError) {
        try createChannelsIfNeeded()
        guard let channel6 else { throw .noDescriptor(ipv4: false) }
        guard let index = Self.interfaceIndex(interface) else { throw .unknownInterface }
        try setOption(channel6, level: Int32(IPPROTO_IPV6), name: CEPOLL_IPV6_MULTICAST_IF, Int32(bitPattern: index))
    }

    /// Joins or leaves a multicast group (the event `multicastAsked`); as GCDAsyncUdpSocket, the descriptor
    /// of the other family is closed. Loop only.
    func changeMembership(join: Bool, _ group: String, _ interface: String?) throws(DatagramError) {
        if case .refuse(let refusal) = state.handle(.multicastAsked) { throw .refused(refusal) }
        guard let groupAddress = SocketAddress(numericHost: group, port: 0) else { throw .unknownGroup }
        switch groupAddress.storage {
        case .v4(let groupSin):
            guard let channel4 else { throw .groupFamilyMismatch }
            var request = ip_mreq()
            request.imr_multiaddr = groupSin.sin_addr
            if let interface {
                guard let address = Self.interfaceAddress(interface, family: AF_INET), case .v4(let sin) = address.storage else {
                    throw .unknownInterface
                }
                request.imr_interface = sin.sin_addr
            }
            try setOption(channel4, level: Int32(IPPROTO_IP), name: join ? CEPOLL_IP_ADD_MEMBERSHIP : CEPOLL_IP_DROP_MEMBERSHIP, request)
            closeChannel(family: AF_INET6)
        case .v6(let groupSin6):
            guard let channel6 else { throw .groupFamilyMismatch }
            var request = ipv6_mreq()
            request.ipv6mr_multiaddr = groupSin6.sin6_addr
            if let interface {
                guard let index = Self.interfaceIndex(interface) else { throw .unknownInterface }
                request.ipv6mr_interface = index
            }
            try setOption(channel6, level: Int32(IPPROTO_IPV6), name: join ? CEPOLL_IPV6_JOIN_GROUP : CEPOLL_IPV6_LEAVE_GROUP, request)
            closeChannel(family: AF_INET)
        case .unix:
            throw .unknownGroup
        }
    }

    func setOption<Value>(_ channel: DatagramChannel, level: Int32, name: Int32, _ value: Value) throws(DatagramError) {
        do {
            try Syscall.setOption(channel.fd, level: level, name: name, value)
        } catch {
            throw .systemCall(error)
        }
    }

    func setOption(_ channel: DatagramChannel, level: Int32, name: Int32, value: Int32) throws(DatagramError) {
        try setOption(channel, level: level, name: name, value)
    }

    /// An address of `family` for an interface description: a numeric address, `"localhost"`, or a name.
    static func interfaceAddress(_ interface: String, family: Int32) -> SocketAddress? {
        if let numeric = SocketAddress(numericHost: interface, port: 0) { return numeric.family == family ? numeric : nil }
        if interface == "localhost" || interface == "loopback" {
            return SocketAddress(numericHost: family == AF_INET ? "127.0.0.1" : "::1", port: 0)
        }
        return SocketAddress.interfaceAddresses(interface, port: 0).first { $0.family == family }
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
