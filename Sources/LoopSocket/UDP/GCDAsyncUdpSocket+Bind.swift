import CEpollShim
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// Creating descriptors, binding and connecting.
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
        try throwingOnLoop("bind(toPort:interface:)") { () throws(GCDAsyncUdpSocketError) in
            try checkCanBind()
            let configuration = self.configuration
            var options = GCDAsyncSocket.Configuration()
            options.ipv4Enabled = configuration.ipv4Enabled
            options.ipv6Enabled = configuration.ipv6Enabled
            let addresses: [SocketAddress]
            do {
                addresses = try GCDAsyncSocket.listenAddresses(interface: interface, port: port, options)
            } catch {
                throw GCDAsyncUdpSocketError(.badParamError, "Unknown interface, or no address of an enabled family: \(interface ?? "any")")
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
        try throwingOnLoop("bind(toAddress:)") { () throws(GCDAsyncUdpSocketError) in
            try checkCanBind()
            guard let address = SocketAddress(bytes: localAddr), address.isIPv4 || address.isIPv6 else {
                throw GCDAsyncUdpSocketError(.badParamError, "A valid IPv4 or IPv6 address was not given")
            }
            let configuration = self.configuration
            guard address.isIPv4 ? configuration.ipv4Enabled : configuration.ipv6Enabled else {
                throw GCDAsyncUdpSocketError(.badParamError, "The address's family (IPv\(address.isIPv4 ? 4 : 6)) is disabled")
            }
            try bindChannels([address])
        }
    }

    private func checkCanBind() throws(GCDAsyncUdpSocketError) {
        if flags.contains(.didBind) {
            throw GCDAsyncUdpSocketError(.badConfigError, "Cannot bind a socket more than once.")
        }
        if !flags.isDisjoint(with: [.connecting, .didConnect]) {
            throw GCDAsyncUdpSocketError(.badConfigError, "Cannot bind after connecting. If needed, bind first, then connect.")
        }
        try checkFamiliesEnabled()
    }

    func checkFamiliesEnabled() throws(GCDAsyncUdpSocketError) {
        let configuration = self.configuration
        guard configuration.ipv4Enabled || configuration.ipv6Enabled else {
            throw GCDAsyncUdpSocketError(.badConfigError, "Both IPv4 and IPv6 have been disabled. Must enable at least one protocol first.")
        }
    }

    /// Binds one descriptor per address (one per family), closing descriptors of a family not bound. With
    /// port 0, the second family takes the port the kernel chose for the first.
    private func bindChannels(_ addresses: [SocketAddress]) throws(GCDAsyncUdpSocketError) {
        if !addresses.contains(where: \.isIPv4) { closeChannel(family: AF_INET) }
        if !addresses.contains(where: \.isIPv6) { closeChannel(family: AF_INET6) }
        var chosenPort: UInt16 = 0
        do throws(SyscallError) {
            for var address in addresses {
                if chosenPort != 0 { address.port = chosenPort }
                let channel = try channel(for: address.family)
                try address.withSockAddr { sa, length throws(SyscallError) in try Syscall.bind(channel.fd, sa, length) }
                if chosenPort == 0 { chosenPort = SocketAddress.of(fd: channel.fd, peer: false)?.port ?? 0 }
            }
        } catch {
            closeChannels()
            throw GCDAsyncUdpSocketError(error)
        }
        flags.insert(.didBind)
    }

    // MARK: Descriptors

    /// The channel of `family`, created (and registered with the loop) if need be.
    func channel(for family: Int32) throws(SyscallError) -> DatagramChannel {
        if family == AF_INET, let channel4 { return channel4 }
        if family == AF_INET6, let channel6 { return channel6 }
        let fd = try Syscall.socket(domain: family, type: CEPOLL_SOCK_DGRAM)
        let channel = DatagramChannel(fd: fd, family: family, owner: self)
        do throws(SyscallError) {
            // One descriptor per family, as GCDAsyncUdpSocket: both can then bind the same port, and IPv4
            // peers appear with IPv4 addresses rather than as v4-mapped IPv6 ones.
            if family == AF_INET6 { try Syscall.setOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_V6ONLY, value: 1) }
            do {
                try eventLoop.register(fd: fd, interest: [], handler: channel)
            } catch {
                if case .system(let error) = error { throw error }
                throw SyscallError(.epollCtl, errno: .invalidArgument)
            }
        } catch {
            try? Syscall.close(fd)
            throw error
        }
        channel.detectOffload(loopConfiguration.segmentationOffload)
        if family == AF_INET { channel4 = channel } else { channel6 = channel }
        eventLoop.countSocket(CEPOLL_DATAGRAM_OPENED)
        flags.insert(.didCreateSockets)
        publishStatus()
        return channel
    }

    /// Creates the descriptors of every enabled family that has none (GCDAsyncUdpSocket's `createSockets`),
    /// for the calls that need one before a bind: options, sends, receives.
    func createChannelsIfNeeded() throws(GCDAsyncUdpSocketError) {
        guard !flags.contains(.didCreateSockets) else { return }
        try checkFamiliesEnabled()
        let configuration = self.configuration
        do throws(SyscallError) {
            if configuration.ipv4Enabled { _ = try channel(for: AF_INET) }
            if configuration.ipv6Enabled { _ = try channel(for: AF_INET6) }
        } catch {
            closeChannels()
            throw GCDAsyncUdpSocketError(error)
        }
    }

    /// Closes one family's descriptor (through the loop, exactly once).
    func closeChannel(family: Int32) {
        let channel = family == AF_INET ? channel4 : channel6
        guard let channel else { return }
        if family == AF_INET { channel4 = nil } else { channel6 = nil }
        publishStatus()  // before the close: a getter must not ask a descriptor the kernel may reuse
        eventLoop.countSocket(CEPOLL_DATAGRAM_CLOSED)
        try? eventLoop.close(fd: channel.fd)
        if channel4 == nil && channel6 == nil { flags.remove(.didCreateSockets) }
    }

    func closeChannels() {
        closeChannel(family: AF_INET)
        closeChannel(family: AF_INET6)
    }

    /// The channel datagrams to `address` leave from; nil if that family has none.
    @inline(__always)
    func channel(to address: SocketAddress) -> DatagramChannel? {
        address.isIPv4 ? channel4 : channel6
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
        try throwingOnLoop("connect(toHost:onPort:)") { () throws(GCDAsyncUdpSocketError) in
            try checkCanConnect()
            guard !host.isEmpty else { throw GCDAsyncUdpSocketError(.badParamError, "The host param is not valid.") }
            flags.insert(.connecting)
            let generation = self.generation
            if let immediate = Resolver.immediate(host, port: port) {
                eventLoop.executeOnLoop { [self] in finishConnect(.success(immediate), generation: generation) }
                return
            }
            DispatchQueue.global().async { [self] in
                let result = Resolver.resolve(host, port: port).mapError { GCDAsyncUdpSocketError(.badParamError, $0.message) }
                let box = UncheckedSendable(result)
                onLoop { [self] in finishConnect(box.value, generation: generation) }
            }
        }
    }

    /// Connects to a raw `sockaddr`; the outcome arrives through the delegate as for ``connect(toHost:onPort:)``.
    ///
    /// - Throws: `badConfigError` if already connecting or connected, or, doing nothing, if waiting for the
    ///   socket's loop would deadlock (see ``GCDAsyncUdpSocket``); `badParamError` for a malformed address.
    public func connect(toAddress remoteAddr: Data) throws {
        try throwingOnLoop("connect(toAddress:)") { () throws(GCDAsyncUdpSocketError) in
            try checkCanConnect()
            guard let address = SocketAddress(bytes: remoteAddr), address.isIPv4 || address.isIPv6 else {
                throw GCDAsyncUdpSocketError(.badParamError, "A valid IPv4 or IPv6 address was not given")
            }
            flags.insert(.connecting)
            let generation = self.generation
            eventLoop.executeOnLoop { [self] in finishConnect(.success([address]), generation: generation) }
        }
    }

    private func checkCanConnect() throws(GCDAsyncUdpSocketError) {
        if !flags.isDisjoint(with: [.connecting, .didConnect]) {
            throw GCDAsyncUdpSocketError(.badConfigError, "Cannot connect a socket more than once.")
        }
        try checkFamiliesEnabled()
    }

    private func finishConnect(_ resolved: Result<[SocketAddress], GCDAsyncUdpSocketError>, generation: UInt32) {
        guard generation == self.generation, flags.contains(.connecting) else { return }
        flags.remove(.connecting)
        do throws(GCDAsyncUdpSocketError) {
            let address = try pickAddress(from: resolved.get())
            // A bound socket connects the descriptor of the address's family; it must have one.
            if flags.contains(.didBind) && channel(to: address) == nil {
                throw GCDAsyncUdpSocketError(.badConfigError, "The socket is bound to no address of the peer's family (IPv\(address.isIPv4 ? 4 : 6))")
            }
            closeChannel(family: address.isIPv4 ? AF_INET6 : AF_INET)
            do throws(SyscallError) {
                let channel = try channel(for: address.family)
                _ = try address.withSockAddr { sa, length throws(SyscallError) in try Syscall.connect(channel.fd, sa, length) }
            } catch {
                throw GCDAsyncUdpSocketError(error)
            }
            peerAddress = address
            flags.formUnion([.didConnect, .didBind])
            publishStatus()
            let data = address.data
            notify { $0.udpSocket($1, didConnectToAddress: data) }
            updateInterest()
        } catch {
            notify { $0.udpSocket($1, didNotConnect: error) }
        }
        pump()
    }

    /// The address to use out of a resolver's list: the preferred family first, only enabled families
    /// (GCDAsyncUdpSocket's `getAddress:error:fromAddresses:`).
    func pickAddress(from addresses: [SocketAddress]) throws(GCDAsyncUdpSocketError) -> SocketAddress {
        let configuration = self.configuration
        let usable = addresses.filter { $0.isIPv4 ? configuration.ipv4Enabled : ($0.isIPv6 && configuration.ipv6Enabled) }
        let preferred: SocketAddress?
        switch configuration.preference {
        case .ipv4: preferred = usable.first(where: \.isIPv4) ?? usable.first
        case .ipv6: preferred = usable.first(where: \.isIPv6) ?? usable.first
        case .neutral: preferred = usable.first
        }
        guard let preferred else {
            throw GCDAsyncUdpSocketError(.badConfigError, "The host has no address of an enabled family (IPv4 enabled: \(configuration.ipv4Enabled), IPv6 enabled: \(configuration.ipv6Enabled))")
        }
        return preferred
    }
}
