import EpollLoop

/// Why a UDP socket's call or datagram failed, as the engine knows it: what happened and the numbers that
/// go with it, no sentence. The face turns it into its own error type (``GCDAsyncUdpSocket`` into
/// ``GCDAsyncUdpSocketError``, with GCDAsyncUdpSocket's codes and messages) where it leaves the engine.
///
/// Small (no message is kept) because a send that fails before it leaves holds one in its destination.
enum DatagramError: Error, Equatable {
    /// The socket's state refuses the call.
    case refused(DatagramState.Refusal)
    /// Both IP families are disabled.
    case noFamilyEnabled
    /// A system call failed.
    case systemCall(SyscallError)
    /// The loop refused a registration change.
    case loop(EventLoopError)
    /// The socket's loop is shut down.
    case loopShutDown
    /// A queued send was dropped by a close.
    case closed
    /// A send waited for room in the socket buffer past its timeout.
    case sendTimeout
    /// A datagram over `maxSendBufferSize` (`limit`).
    case datagramTooLarge(bytes: Int, limit: Int)
    /// A send that would take the queue over `maxQueuedSendBytes` (`limit`; `queued`: the bytes queued).
    case sendQueueFull(queued: Int, limit: Int)
    /// A send with a destination on a connected socket.
    case destinationWhenConnected
    /// A send without a destination on a socket that is not connected.
    case noDestination
    /// A send to an address of a family the socket has no descriptor of (disabled, or bound to the other).
    case noDescriptorToSend(ipv4: Bool)
    /// A host name that did not resolve.
    case unresolved(ResolverError)
    /// The host has no address of an enabled family.
    case noEnabledAddress(ipv4Enabled: Bool, ipv6Enabled: Bool)
    /// A bound socket connects to a peer of a family it is not bound to.
    case peerFamilyNotBound(ipv4: Bool)
    /// Broadcast asked of a socket without an IPv4 descriptor.
    case broadcastWithoutIPv4
    /// A multicast interface set on a socket without a descriptor of that family.
    case noDescriptor(ipv4: Bool)
    /// An interface given by a name or an address that is not one.
    case unknownInterface
    /// A multicast group that is not a numeric address.
    case unknownGroup
    /// A multicast group of a family the socket has no descriptor of.
    case groupFamilyMismatch
    /// A received datagram longer than the receive size (`limit`), dropped.
    case datagramTooLong(limit: Int)
    /// An address that is not a valid IPv4 or IPv6 `sockaddr`.
    case invalidAddress
    /// An empty host.
    case invalidHost
    /// A bind's interface (nil: any) that is unknown or has no address of an enabled family.
    case unknownBindInterface(String?)
    /// A bind to an address of a disabled family.
    case familyDisabled(ipv4: Bool)
}
