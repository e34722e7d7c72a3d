import EpollLoop
import FoundationEssentials

/// Broadcast, port reuse and multicast. Each call here throws `badConfigError`, doing nothing, if waiting for the socket's loop would deadlock (see ``GCDAsyncUdpSocket``).
extension GCDAsyncUdpSocket {
    /// Allows sending to broadcast addresses (`SO_BROADCAST`, IPv4 only: IPv6 has no broadcast). Without
    /// it, a send to a broadcast address fails with `EACCES`.
    ///
    /// - Throws: `badConfigError` if IPv4 is disabled; `otherError` if `setsockopt` fails.
    public func enableBroadcast(_ flag: Bool) throws {
        try throwingOnLoop("enableBroadcast(_:)") { () throws(DatagramError) in
            try setBroadcast(flag)
        }
    }

    /// Lets other sockets bind the same address and port (`SO_REUSEPORT`; call before binding, on each of
    /// them). The kernel then spreads incoming datagrams over them by flow.
    public func enableReusePort(_ flag: Bool) throws {
        try throwingOnLoop("enableReusePort(_:)") { () throws(DatagramError) in
            try setReusePort(flag)
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
        try throwingOnLoop("sendIPv4Multicast(onInterface:)") { () throws(DatagramError) in
            try setMulticastInterface4(interface)
        }
    }

    /// The interface IPv6 multicast datagrams leave from (`IPV6_MULTICAST_IF`): a name or an IPv6 address.
    public func sendIPv6Multicast(onInterface interface: String) throws {
        try throwingOnLoop("sendIPv6Multicast(onInterface:)") { () throws(DatagramError) in
            try setMulticastInterface6(interface)
        }
    }

    private func multicast(join: Bool, _ group: String, _ interface: String?) throws {
        try throwingOnLoop(join ? "joinMulticastGroup(_:onInterface:)" : "leaveMulticastGroup(_:onInterface:)") { () throws(DatagramError) in
            try changeMembership(join: join, group, interface)
        }
    }
}
