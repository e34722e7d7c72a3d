import CEpollShim
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// Listening and accepting. Accepted sockets are spread over the listener's event loop group.
extension GCDAsyncSocket {
    /// Listens on every interface, IPv4 and IPv6 (each as enabled), on `port` (0: the OS picks one, the same
    /// for both families; read it from ``localPort``).
    public func accept(onPort port: UInt16) throws {
        try accept(onInterface: nil, port: port)
    }

    /// Listens on `interface`: nil for all, `"localhost"`/`"loopback"`, a numeric IPv4 or IPv6 address, or an
    /// interface name such as `"lo"`.
    ///
    /// - Throws: ``GCDAsyncSocketError`` — `badConfigError` if already connected or listening, or if both
    ///   families are disabled; `badParamError` for an unknown interface; `otherError` with the errno when
    ///   `socket`, `bind` or `listen` fails (for example `EADDRINUSE`).
    public func accept(onInterface interface: String?, port: UInt16) throws {
        let configuration = try beginStarting(as: .accepting)
        do {
            let addresses = try Self.listenAddresses(interface: interface, port: port, configuration)
            var listening: [(Int32, SocketAddress)] = []
            do {
                var chosenPort = port
                for var address in addresses {
                    if chosenPort != 0 { address.port = chosenPort }
                    let fd = try Self.openListener(address, configuration.options)
                    listening.append((fd, address))
                    if chosenPort == 0, let bound = SocketAddress.of(fd: fd, peer: false) { chosenPort = bound.port }
                }
            } catch {
                for (fd, _) in listening { LibraryFault.close(fd) }
                throw error
            }
            try startListening(listening, configuration: configuration, unixPath: nil)
        } catch {
            publish(status: .idle)
            throw error
        }
    }

    /// Listens on a Unix-domain socket at `url`'s path, replacing a stale socket file left there.
    ///
    /// - Throws: ``GCDAsyncSocketError`` — `badParamError` for a path too long for `sun_path`, `otherError` with
    ///   the errno if the socket cannot be created or bound.
    public func accept(on url: URL) throws {
        let configuration = try beginStarting(as: .accepting)
        do {
            let path = url.path
            guard let address = SocketAddress(unixPath: path) else {
                throw GCDAsyncSocketError(.badParamError, "Unix socket path is empty or longer than 107 bytes: \(path)")
            }
            var status = stat()
            if lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFSOCK { unlink(path) }
            let fd = try Self.openListener(address, configuration.options)
            if let mode = configuration.options.unixSocketMode { chmod(path, mode_t(mode)) }
            try startListening([(fd, address)], configuration: configuration, unixPath: path)
        } catch {
            publish(status: .idle)
            throw error
        }
    }

    /// Checks that the socket is idle and claims it for connecting or accepting, so a second call fails fast.
    func beginStarting(as phase: Status) throws -> Configuration {
        let outcome = shared.withLock { state -> Result<Configuration, GCDAsyncSocketError> in
            // GCDAsyncSocket's first check, with its message: the outcome of a connect has nowhere to go.
            guard phase != .connecting || state.delegate != nil else {
                return .failure(GCDAsyncSocketError(.badConfigError, "Attempting to connect without a delegate. Set a delegate first."))
            }
            guard state.status == .idle else {
                return .failure(GCDAsyncSocketError(.badConfigError,
                    "Attempting to connect or accept while connected, connecting or accepting. Disconnect first."))
            }
            guard state.configuration.ipv4Enabled || state.configuration.ipv6Enabled else {
                return .failure(GCDAsyncSocketError(.badConfigError, "Both IPv4 and IPv6 are disabled"))
            }
            state.status = phase
            state.claim &+= 1
            var configuration = state.configuration
            configuration.claim = state.claim
            return .success(configuration)
        }
        return try outcome.get()
    }

    static func openListener(_ address: SocketAddress, _ options: SocketOptions) throws -> Int32 {
        do throws(SyscallError) {
            let fd = try Syscall.socket(domain: address.family)
            do throws(SyscallError) {
                if address.isIPv6 { try Syscall.setOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_V6ONLY, value: 1) }
                try options.applyToListener(fd, isUnix: address.isUnix)
                try address.withSockAddr { sa, length throws(SyscallError) in try Syscall.bind(fd, sa, length) }
                try Syscall.listen(fd, backlog: options.backlog)
            } catch {
                try? Syscall.close(fd)
                throw error
            }
            return fd
        } catch {
            throw GCDAsyncSocketError(error)
        }
    }

    /// The addresses to listen on for an interface description.
    static func listenAddresses(interface: String?, port: UInt16, _ configuration: Configuration) throws -> [SocketAddress] {
        var result: [SocketAddress] = []
        switch interface {
        case nil, "":
            if configuration.ipv4Enabled { result.append(.any(family: AF_INET, port: port)) }
            if configuration.ipv6Enabled { result.append(.any(family: AF_INET6, port: port)) }
        case "localhost", "loopback":
            if configuration.ipv4Enabled { result.append(SocketAddress(numericHost: "127.0.0.1", port: port)!) }
            if configuration.ipv6Enabled { result.append(SocketAddress(numericHost: "::1", port: port)!) }
        case let name?:
            if let numeric = SocketAddress(numericHost: name, port: port) {
                result.append(numeric)
            } else {
                result = interfaceAddresses(name, port: port)
            }
            result = result.filter { ($0.isIPv4 && configuration.ipv4Enabled) || ($0.isIPv6 && configuration.ipv6Enabled) }
        }
        guard !result.isEmpty else {
            throw GCDAsyncSocketError(.badParamError, "Unknown interface, or no address of an enabled family: \(interface ?? "any")")
        }
        return result
    }

    /// The IPv4 and IPv6 addresses of a network interface, by name (`getifaddrs`).
    static func interfaceAddresses(_ name: String, port: UInt16) -> [SocketAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var result: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard String(cString: entry.pointee.ifa_name) == name, let sa = entry.pointee.ifa_addr else { continue }
            switch Int32(sa.pointee.sa_family) {
            case AF_INET:
                var address = SocketAddress(sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee })
                address.port = port
                result.append(address)
            case AF_INET6:
                var address = SocketAddress(sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee })
                address.port = port
                result.append(address)
            default:
                break
            }
        }
        return result
    }
}
