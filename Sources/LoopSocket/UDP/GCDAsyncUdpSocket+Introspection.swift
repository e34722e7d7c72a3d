import EpollLoop
import FoundationEssentials
import Glibc

/// GCDAsyncUdpSocket's diagnostics: addresses, state, descriptors. Each waits for the loop's answer.
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
    public func isConnected() -> Bool { syncOnLoop { flags.contains(.didConnect) } ?? false }
    /// Whether the socket has no descriptor (never bound, or closed).
    public func isClosed() -> Bool { syncOnLoop { !flags.contains(.didCreateSockets) } ?? true }
    /// Whether the socket uses IPv4 (has an IPv4 descriptor).
    public func isIPv4() -> Bool { syncOnLoop { channel4 != nil } ?? false }
    /// Whether the socket uses IPv6.
    public func isIPv6() -> Bool { syncOnLoop { channel6 != nil } ?? false }

    /// The descriptor when the socket has exactly one, else -1 (GCDAsyncUdpSocket's `socketFD`). Use it on
    /// the loop (``perform(_:)``): the socket closes it.
    public func socketFD() -> Int32 {
        syncOnLoop { () -> Int32 in
            switch (channel4, channel6) {
            case (let v4?, nil): return v4.fd
            case (nil, let v6?): return v6.fd
            default: return -1
            }
        } ?? -1
    }
    /// The IPv4 descriptor, or -1.
    public func socket4FD() -> Int32 { syncOnLoop { channel4?.fd ?? -1 } ?? -1 }
    /// The IPv6 descriptor, or -1.
    public func socket6FD() -> Int32 { syncOnLoop { channel6?.fd ?? -1 } ?? -1 }

    /// Runs `block` on the socket's loop and waits for it (GCDAsyncUdpSocket's `performBlock:`).
    public func perform(_ block: () -> Void) {
        _ = syncOnLoop(block)
    }

    private func local(_ family: Int32?) -> SocketAddress? {
        syncOnLoop { () -> SocketAddress? in
            let channel: DatagramChannel?
            switch family {
            case AF_INET?: channel = channel4
            case AF_INET6?: channel = channel6
            default: channel = channel4 ?? channel6
            }
            guard let channel, flags.contains(.didBind) else { return nil }
            return SocketAddress.of(fd: channel.fd, peer: false)
        } ?? nil
    }

    private func peer() -> SocketAddress? {
        syncOnLoop { peerAddress } ?? nil
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
