import CEpollShim
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// Binding and connecting: the public calls; the descriptors and the transitions are `DatagramEngine+Bind.swift`.
extension GCDAsyncUdpSocket {
    // MARK: Binding

    /// Binds to `port` on every interface, IPv4 and IPv6 (each as enabled; 0: the OS picks one, the same
    /// for both families).
    ///
    /// - Throws: ``GCDAsyncUdpSocketError`` — `badConfigError` if already bound or connected or both families
    ///   are disabled, or if waiting for the socket's loop would deadlock (see ``GCDAsyncUdpSocket``: the
    ///   call does nothing then); `otherError` with the errno if `bind` fails (for example `EADDRINUSE`).
    public func bind(toPort port: UInt16) throws {
        try bind(toPort: port, interface: nil)
    }

    /// Binds to `port` on `interface`: nil for all, `"localhost"`/`"loopback"`, a numeric IPv4 or IPv6 address,
    /// or an interface name such as `"lo"`.
    ///
    /// - Throws: as ``bind(toPort:)``, and `badParamError` for an unknown interface.
    public func bind(toPort port: UInt16, interface: String?) throws {
        try throwingOnLoop("bind(toPort:interface:)") { () throws(DatagramError) in
            try checkCanBind()
            let configuration = loopConfiguration
            var options = GCDAsyncSocket.Configuration()
            options.ipv4Enabled = configuration.ipv4Enabled
            options.ipv6Enabled = configuration.ipv6Enabled
            let addresses: [SocketAddress]
            do {
                addresses = try GCDAsyncSocket.listenAddresses(interface: interface, port: port, options)
            } catch {
                throw .unknownBindInterface(interface)
            }
            let v4 = addresses.first(where: \.isIPv4)
            let v6 = addresses.first(where: \.isIPv6)
            try bindChannels([v4, v6].compactMap { $0 })
        }
    }

    /// Binds to a raw `sockaddr` (IPv4 or IPv6).
    ///
    /// - Throws: as ``bind(toPort:)``, and `badParamError` for a malformed address or one of a disabled family.
    public func bind(toAddress localAddr: Data) throws {
        try throwingOnLoop("bind(toAddress:)") { () throws(DatagramError) in
            try checkCanBind()
            guard let address = SocketAddress(bytes: localAddr), address.isIPv4 || address.isIPv6 else {
                throw .invalidAddress
            }
            let configuration = loopConfiguration
            guard address.isIPv4 ? configuration.ipv4Enabled : configuration.ipv6Enabled else {
                throw .familyDisabled(ipv4: address.isIPv4)
            }
            try bindChannels([address])
        }
    }

    // MARK: Connecting

    /// Connects to `host` (a name is resolved off the loop), so that ``send(_:withTimeout:tag:)`` needs no
    /// address and only `host`'s datagrams are received. The outcome arrives as
    /// ``GCDAsyncUdpSocketDelegate/udpSocket(_:didConnectToAddress:)`` or `udpSocket(_:didNotConnect:)`;
    /// sends queued meanwhile wait for it.
    ///
    /// - Throws: `badConfigError` if already connecting or connected or both families are disabled, or,
    ///   doing nothing, if waiting for the socket's loop would deadlock (see ``GCDAsyncUdpSocket``);
    ///   `badParamError` for an empty host.
    public func connect(toHost host: String, onPort port: UInt16) throws {
        try throwingOnLoop("connect(toHost:onPort:)") { () throws(DatagramError) in
            try checkFamiliesEnabled()
            guard !host.isEmpty else { throw .invalidHost }
            try connect(to: .host(host, port))
        }
    }

    /// Connects to a raw `sockaddr`; the outcome arrives through the delegate as for ``connect(toHost:onPort:)``.
    ///
    /// - Throws: `badConfigError` if already connecting or connected, or, doing nothing, if waiting for the
    ///   socket's loop would deadlock (see ``GCDAsyncUdpSocket``); `badParamError` for a malformed address.
    public func connect(toAddress remoteAddr: Data) throws {
        try throwingOnLoop("connect(toAddress:)") { () throws(DatagramError) in
            try checkFamiliesEnabled()
            guard let address = SocketAddress(bytes: remoteAddr), address.isIPv4 || address.isIPv6 else {
                throw .invalidAddress
            }
            try connect(to: .addresses([address]))
        }
    }
}
