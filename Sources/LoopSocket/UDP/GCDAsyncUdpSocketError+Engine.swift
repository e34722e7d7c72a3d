import EpollLoop
import Glibc

/// The face's reading of the engine's ``DatagramError``: GCDAsyncUdpSocket's code and message for each, a
/// failed system call with its `errno` and call.
extension GCDAsyncUdpSocketError {
    /// The face's error for `error`.
    init(_ error: DatagramError) {
        switch error {
        case .refused(let refusal): self.init(refusal)
        case .noFamilyEnabled:
            self.init(.badConfigError, "Both IPv4 and IPv6 have been disabled. Must enable at least one protocol first.")
        case .systemCall(let failure): self.init(failure)
        case .loop(let refusal): self.init(refusal)
        case .loopShutDown: self = .loopShutDown
        case .closed: self = .closed
        case .sendTimeout: self = .sendTimeout
        case .datagramTooLarge(let bytes, let limit):
            self.init(.badParamError, "Datagram of \(bytes) bytes is larger than maxSendBufferSize (\(limit))")
        case .sendQueueFull(let queued, let limit):
            self.init(.otherError, "Send queue full: \(queued) bytes queued, bound \(limit) (maxQueuedSendBytes)", errno: .noBufferSpace)
        case .destinationWhenConnected: self.init(.badConfigError, "Cannot specify destination of packet for connected socket")
        case .noDestination: self.init(.badConfigError, "You must specify destination of packet for a non-connected socket")
        case .noDescriptorToSend(let ipv4):
            self.init(.badConfigError,
                "The socket has no IPv\(ipv4 ? 4 : 6) descriptor: that family is disabled, or the socket is bound to the other one")
        case .unresolved(let failure): self.init(.badParamError, failure.message)
        case .noEnabledAddress(let ipv4Enabled, let ipv6Enabled):
            self.init(.badConfigError,
                "The host has no address of an enabled family (IPv4 enabled: \(ipv4Enabled), IPv6 enabled: \(ipv6Enabled))")
        case .peerFamilyNotBound(let ipv4):
            self.init(.badConfigError, "The socket is bound to no address of the peer's family (IPv\(ipv4 ? 4 : 6))")
        case .broadcastWithoutIPv4: self.init(.badConfigError, "Broadcast is IPv4 only, and the socket has no IPv4 descriptor")
        case .noDescriptor(let ipv4): self.init(.badConfigError, "The socket has no IPv\(ipv4 ? 4 : 6) descriptor")
        case .unknownInterface:
            self.init(.badParamError, "Unknown interface. Specify valid interface by name (e.g. \"lo\") or IP address.")
        case .unknownGroup: self.init(.badParamError, "Unknown group. Specify valid group IP address.")
        case .groupFamilyMismatch: self.init(.badParamError, "Socket, group, and interface do not have matching IP versions")
        case .datagramTooLong(let limit):
            self.init(.otherError, "Datagram longer than the maximum receive size (\(limit) bytes) dropped", errno: Errno(rawValue: EMSGSIZE))
        case .invalidAddress: self.init(.badParamError, "A valid IPv4 or IPv6 address was not given")
        case .invalidHost: self.init(.badParamError, "The host param is not valid.")
        case .unknownBindInterface(let interface):
            self.init(.badParamError, "Unknown interface, or no address of an enabled family: \(interface ?? "any")")
        case .familyDisabled(let ipv4): self.init(.badParamError, "The address's family (IPv\(ipv4 ? 4 : 6)) is disabled")
        }
    }

    /// A call the socket's state refuses (``DatagramState/Refusal``), in GCDAsyncUdpSocket's words.
    init(_ refusal: DatagramState.Refusal) {
        switch refusal {
        case .alreadyBound: self.init(.badConfigError, "Cannot bind a socket more than once.")
        case .bindAfterConnect: self.init(.badConfigError, "Cannot bind after connecting. If needed, bind first, then connect.")
        case .alreadyConnected: self.init(.badConfigError, "Cannot connect a socket more than once.")
        case .noDescriptor:
            self.init(.badConfigError,
                "Must bind socket before you can receive data. You can do this explicitly via bind, or implicitly via connect or by sending data.")
        case .multicastUnbound: self.init(.badConfigError, "Must bind a socket before joining a multicast group.")
        case .multicastConnected: self.init(.badConfigError, "Cannot join a multicast group if connected.")
        }
    }
}
