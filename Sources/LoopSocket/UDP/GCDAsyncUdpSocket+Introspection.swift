import EpollLoop
import FoundationEssentials
import Glibc

/// GCDAsyncUdpSocket's diagnostics: addresses, state, descriptors. Any thread, without waiting for the loop:
/// they read the status the loop publishes when it changes (``SharedState/status``), and ask the kernel for
/// addresses under the same lock, as ``GCDAsyncSocket``'s getters do.
extension GCDAsyncUdpSocket {
    /// The local address (the IPv4 descriptor's if there is one), as raw `sockaddr` bytes; nil before a bind.
    public func localAddress() -> Data? { local(nil)?.data }
    /// The local numeric host.
    public func localHost() -> String? { local(nil)?.host }
    /// The local port; 0 before a bind.
    public func localPort() -> UInt16 { local(nil)?.port ?? 0 }
    /// The IPv4 descriptor's local address.
    public func localAddress_IPv4() -> Data? { local(AF_INET)?.data }
    /// The IPv4 descriptor's local host.
    public func localHost_IPv4() -> String? { local(AF_INET)?.host }
    /// The IPv4 descriptor's local port.
    public func localPort_IPv4() -> UInt16 { local(AF_INET)?.port ?? 0 }
    /// The IPv6 descriptor's local address.
    public func localAddress_IPv6() -> Data? { local(AF_INET6)?.data }
    /// The IPv6 descriptor's local host.
    public func localHost_IPv6() -> String? { local(AF_INET6)?.host }
    /// The IPv6 descriptor's local port.
    public func localPort_IPv6() -> UInt16 { local(AF_INET6)?.port ?? 0 }

    /// The connected peer's address; nil unless connected.
    public func connectedAddress() -> Data? { peer()?.data }
    /// The connected peer's numeric host.
    public func connectedHost() -> String? { peer()?.host }
    /// The connected peer's port; 0 unless connected.
    public func connectedPort() -> UInt16 { peer()?.port ?? 0 }

    /// Whether a connect succeeded.
    public func isConnected() -> Bool { status.connected }
    /// Whether the socket has no descriptor (never bound, or closed).
    public func isClosed() -> Bool { status.fd(nil) < 0 }
    /// Whether the socket uses IPv4 (has an IPv4 descriptor).
    public func isIPv4() -> Bool { status.fd4 >= 0 }
    /// Whether the socket uses IPv6.
    public func isIPv6() -> Bool { status.fd6 >= 0 }

    /// The descriptor when the socket has exactly one, else -1 (GCDAsyncUdpSocket's `socketFD`). Use it on
    /// the loop (``perform(_:)``): the socket closes it.
    public func socketFD() -> Int32 {
        let status = self.status
        return status.fd4 >= 0 && status.fd6 >= 0 ? -1 : status.fd(nil)
    }
    /// The IPv4 descriptor, or -1.
    public func socket4FD() -> Int32 { status.fd4 }
    /// The IPv6 descriptor, or -1.
    public func socket6FD() -> Int32 { status.fd6 }

    /// Runs `block` on the socket's loop and waits for it (GCDAsyncUdpSocket's `performBlock:`), from any
    /// thread, another event loop's included; does nothing if the loop is shut down.
    ///
    /// Its wait is recorded as the other calls' are, so they do not wait for a loop that waits here. But
    /// called on loop A's thread while this socket's loop waits, itself or through other loops, for A, it
    /// can neither wait (the loops would deadlock) nor run the caller's block later: it stops the process
    /// with that explanation, as libdispatch stops one that calls `dispatch_sync` onto its own queue. Where
    /// loops call each other's sockets, queue the work with `eventLoop.execute` instead.
    public func perform(_ block: () -> Void) {
        performWaiting(block, "GCDAsyncUdpSocket")
    }

    private var status: Status { shared.withLock { $0.status } }

    /// The local address of the descriptor of `family` (of either, for nil), asked of the kernel under the
    /// lock; nil while it is not bound (the kernel reports port 0 until a bind, a connect or a send binds it).
    private func local(_ family: Int32?) -> SocketAddress? {
        shared.withLock { state -> SocketAddress? in
            let fd = state.status.fd(family)
            guard fd >= 0, let address = SocketAddress.of(fd: fd, peer: false), address.port != 0 else { return nil }
            return address
        }
    }

    /// The connected peer, asked of the kernel under the lock (a connected socket keeps one descriptor).
    private func peer() -> SocketAddress? {
        shared.withLock { state -> SocketAddress? in
            let fd = state.status.fd(nil)
            guard state.status.connected, fd >= 0 else { return nil }
            return SocketAddress.of(fd: fd, peer: true)
        }
    }

    // MARK: Class helpers

    /// The numeric host of a raw `sockaddr` (IPv4 or IPv6), or nil.
    public class func host(fromAddress address: Data) -> String? {
        SocketAddress(bytes: address)?.host
    }

    /// The port of a raw `sockaddr`, or 0.
    public class func port(fromAddress address: Data) -> UInt16 {
        SocketAddress(bytes: address)?.port ?? 0
    }

    /// The family of a raw `sockaddr` (`AF_INET`, `AF_INET6`), or `AF_UNSPEC`.
    public class func family(fromAddress address: Data) -> Int32 {
        guard let parsed = SocketAddress(bytes: address), parsed.isIPv4 || parsed.isIPv6 else { return AF_UNSPEC }
        return parsed.family
    }

    /// Whether a raw `sockaddr` is IPv4.
    public class func isIPv4Address(_ address: Data) -> Bool {
        SocketAddress(bytes: address)?.isIPv4 ?? false
    }

    /// Whether a raw `sockaddr` is IPv6.
    public class func isIPv6Address(_ address: Data) -> Bool {
        SocketAddress(bytes: address)?.isIPv6 ?? false
    }

    /// Host and port of a raw `sockaddr`; false if it is neither IPv4 nor IPv6.
    @discardableResult @_disfavoredOverload
    public class func getHost(_ host: UnsafeMutablePointer<String?>?, port: UnsafeMutablePointer<UInt16>?, fromAddress address: Data) -> Bool {
        getHost(host, port: port, family: nil, fromAddress: address)
    }

    /// Host, port and family of a raw `sockaddr`; false if it is neither IPv4 nor IPv6.
    @discardableResult @_disfavoredOverload
    public class func getHost(
        _ host: UnsafeMutablePointer<String?>?, port: UnsafeMutablePointer<UInt16>?, family: UnsafeMutablePointer<Int32>?,
        fromAddress address: Data
    ) -> Bool {
        guard let parsed = SocketAddress(bytes: address), let text = parsed.host else { return false }
        host?.pointee = text
        port?.pointee = parsed.port
        family?.pointee = parsed.family
        return true
    }
}
