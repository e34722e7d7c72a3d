import CEpollShim
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// Descriptors, binding and connecting: the lifecycle's events (``DatagramState/Lifecycle``).
extension DatagramEngine {
    /// Whether an explicit bind may go ahead (the event `bindAsked`). Loop only.
    func checkCanBind() throws(DatagramError) {
        if case .refuse(let refusal) = state.handle(.bindAsked) { throw .refused(refusal) }
        try checkFamiliesEnabled()
    }

    func checkFamiliesEnabled() throws(DatagramError) {
        let configuration = loopConfiguration
        guard configuration.ipv4Enabled || configuration.ipv6Enabled else { throw .noFamilyEnabled }
    }

    /// Binds one descriptor per address (one per family), closing descriptors of a family not bound. With
    /// port 0, the second family takes the port the kernel chose for the first.
    func bindChannels(_ addresses: [SocketAddress]) throws(DatagramError) {
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
            throw .systemCall(error)
        }
        _ = state.handle(.bound)  // nothing else to do: the descriptors are bound
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
        publishStatus()
        return channel
    }

    /// Creates the descriptors of every enabled family that has none (GCDAsyncUdpSocket's `createSockets`),
    /// for the calls that need one before a bind: options, sends, receives.
    func createChannelsIfNeeded() throws(DatagramError) {
        guard !hasChannels else { return }
        try checkFamiliesEnabled()
        let configuration = loopConfiguration
        do throws(SyscallError) {
            if configuration.ipv4Enabled { _ = try channel(for: AF_INET) }
            if configuration.ipv6Enabled { _ = try channel(for: AF_INET6) }
        } catch {
            closeChannels()
            throw .systemCall(error)
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

    /// Where a connect goes: a host to resolve off the loop, or addresses already known.
    enum ConnectTarget {
        case host(String, UInt16)
        case addresses([SocketAddress])
    }

    /// Starts a connect (the event `connectAsked`): its outcome arrives in a later loop iteration, never
    /// inside the caller's call. Loop only.
    func connect(to target: ConnectTarget) throws(DatagramError) {
        if case .refuse(let refusal) = state.handle(.connectAsked) { throw .refused(refusal) }
        switch target {
        case .addresses(let addresses):
            executeIfStillCurrent { [self] in finishConnect(.success(addresses)) }
        case .host(let host, let port):
            if let immediate = Resolver.immediate(host, port: port) {
                executeIfStillCurrent { [self] in finishConnect(.success(immediate)) }
                return
            }
            offLoop({ Resolver.resolve(host, port: port).mapError(DatagramError.unresolved) }) { [self] resolved in
                finishConnect(resolved)
            }
        }
    }

    /// The connect's host resolved (or did not): connects the descriptor, and reports the outcome the state
    /// gives (none once a close came first).
    private func finishConnect(_ resolved: Result<[SocketAddress], DatagramError>) {
        let outcome = Result { () throws(DatagramError) in try connectDescriptor(to: resolved.get()) }
        switch outcome {
        case .success(let address):
            guard case .reportConnected = state.handle(.connected) else { return }
            peerAddress = address
            publishStatus()
            sinkReport(.connected(address: address.data))
            updateInterest()
        case .failure(let error):
            guard case .reportConnectFailed = state.handle(.connectFailed) else { return }
            sinkReport(.didNotConnect(error))
        }
        pump()
    }

    /// Connects the descriptor of the preferred address's family (closing the other family's) and returns
    /// the address.
    private func connectDescriptor(to addresses: [SocketAddress]) throws(DatagramError) -> SocketAddress {
        let address = try pickAddress(from: addresses)
        // A bound socket connects the descriptor of the address's family; it must have one.
        if case .connecting(fromBound: true) = state.lifecycle, channel(to: address) == nil {
            throw .peerFamilyNotBound(ipv4: address.isIPv4)
        }
        closeChannel(family: address.isIPv4 ? AF_INET6 : AF_INET)
        do throws(SyscallError) {
            let channel = try channel(for: address.family)
            _ = try address.withSockAddr { sa, length throws(SyscallError) in try Syscall.connect(channel.fd, sa, length) }
        } catch {
            throw .systemCall(error)
        }
        return address
    }

    /// The address to use out of a resolver's list: the preferred family first, only enabled families
    /// (GCDAsyncUdpSocket's `getAddress:error:fromAddresses:`).
    func pickAddress(from addresses: [SocketAddress]) throws(DatagramError) -> SocketAddress {
        let configuration = loopConfiguration
        let usable = addresses.filter { $0.isIPv4 ? configuration.ipv4Enabled : ($0.isIPv6 && configuration.ipv6Enabled) }
        let preferred: SocketAddress?
        switch configuration.preference {
        case .ipv4: preferred = usable.first(where: \.isIPv4) ?? usable.first
        case .ipv6: preferred = usable.first(where: \.isIPv6) ?? usable.first
        case .neutral: preferred = usable.first
        }
        guard let preferred else {
            throw .noEnabledAddress(ipv4Enabled: configuration.ipv4Enabled, ipv6Enabled: configuration.ipv6Enabled)
        }
        return preferred
    }
}
