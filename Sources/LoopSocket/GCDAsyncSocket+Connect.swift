import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// Connecting: nonblocking, with DNS off the loop and Happy Eyeballs (RFC 8305) across every address.
extension GCDAsyncSocket {
    /// Connects to `host` (a name or numeric address) on `port`, with no timeout.
    public func connect(toHost host: String, onPort port: UInt16) throws {
        try connect(toHost: host, onPort: port, viaInterface: nil, withTimeout: -1)
    }

    /// Connects to `host` on `port`; a negative timeout means none.
    public func connect(toHost host: String, onPort port: UInt16, withTimeout timeout: TimeInterval) throws {
        try connect(toHost: host, onPort: port, viaInterface: nil, withTimeout: timeout)
    }

    /// Connects to `host` on `port` from a local interface, optionally with a local port (`"lo"`,
    /// `"127.0.0.1:8082"`, `":8082"`). A negative timeout means none.
    ///
    /// Numeric hosts and `localhost` resolve at once; other names are looked up off the loop. Every address
    /// is tried, alternating families, a new attempt starting every `alternateAddressDelay` until one connects.
    ///
    /// - Throws: ``GCDAsyncSocketError``: `badParamError` for an empty host or a bad interface,
    ///   `badConfigError` if the socket is already connected, connecting or listening. Later failures
    ///   (unknown host, refused, timeout) arrive in `socketDidDisconnect(_:withError:)`.
    public func connect(toHost host: String, onPort port: UInt16, viaInterface interface: String?, withTimeout timeout: TimeInterval) throws {
        guard !host.isEmpty else { throw GCDAsyncSocketError(.badParamError, "Invalid host parameter (nil or \"\"). Should be a domain name or IP address string.") }
        var started = try beginStarting(as: .connecting)
        started.connectHost = host
        let configuration = started
        let local: [SocketAddress]
        do {
            local = try Self.localBindAddresses(interface, configuration)
        } catch {
            publish(status: .idle)
            throw error
        }
        let immediate = Resolver.immediate(host, port: port)
        try start { [self] in
            startConnecting(configuration: configuration, timeout: timeout, local: local) { [self] in
                if let immediate {
                    beginAttempts(immediate)
                    return
                }
                let index = stateIndex
                DispatchQueue.global().async { [self] in
                    let resolved = Resolver.resolve(host, port: port)
                    onLoop { [self] in
                        guard stateIndex == index, lifecycle == .connecting else { return }
                        switch resolved {
                        case .success(let addresses): beginAttempts(addresses)
                        case .failure(let error): closeWithError(error)
                        }
                    }
                }
            }
        }
    }

    /// Connects to a raw `sockaddr` (IPv4 or IPv6), with no timeout.
    public func connect(toAddress remoteAddr: Data) throws {
        try connect(toAddress: remoteAddr, viaInterface: nil, withTimeout: -1)
    }

    /// Connects to a raw `sockaddr`; a negative timeout means none.
    public func connect(toAddress remoteAddr: Data, withTimeout timeout: TimeInterval) throws {
        try connect(toAddress: remoteAddr, viaInterface: nil, withTimeout: timeout)
    }

    /// Connects to a raw `sockaddr` from a local interface; a negative timeout means none.
    public func connect(toAddress remoteAddr: Data, viaInterface interface: String?, withTimeout timeout: TimeInterval) throws {
        guard let address = SocketAddress(bytes: remoteAddr), !address.isUnix else {
            throw GCDAsyncSocketError(.badParamError, "A remote address must be a sockaddr_in or sockaddr_in6")
        }
        let configuration = try beginStarting(as: .connecting)
        guard (address.isIPv4 && configuration.ipv4Enabled) || (address.isIPv6 && configuration.ipv6Enabled) else {
            publish(status: .idle)
            throw GCDAsyncSocketError(.badConfigError, "The address's IP family is disabled")
        }
        let local: [SocketAddress]
        do {
            local = try Self.localBindAddresses(interface, configuration)
        } catch {
            publish(status: .idle)
            throw error
        }
        try start { [self] in
            startConnecting(configuration: configuration, timeout: timeout, local: local) { [self] in beginAttempts([address]) }
        }
    }

    /// Connects to the Unix-domain socket at `url`'s path; a negative timeout means none.
    public func connect(to url: URL, withTimeout timeout: TimeInterval) throws {
        guard let address = SocketAddress(unixPath: url.path) else {
            throw GCDAsyncSocketError(.badParamError, "Unix socket path is empty or longer than 107 bytes: \(url.path)")
        }
        let configuration = try beginStarting(as: .connecting)
        try start { [self] in
            startConnecting(configuration: configuration, timeout: timeout, local: []) { [self] in beginAttempts([address]) }
        }
    }

    /// Runs `body` on the loop, or undoes the claim and throws if the loop is shut down.
    private func start(_ body: @escaping @Sendable () -> Void) throws {
        guard onLoop(body) else {
            publish(status: .idle)
            throw GCDAsyncSocketError.loopShutDown
        }
    }

    private func startConnecting(configuration: Configuration, timeout: TimeInterval, local: [SocketAddress], then begin: () -> Void) {
        guard lifecycle == .idle else { return }
        config = configuration
        lifecycle = .connecting
        connecting = ConnectAttempts(local: local)
        if timeout >= 0 {
            connectTimer = eventLoop.scheduleOnLoop(at: Self.deadline(after: timeout)) { [self] in
                connectTimer = .invalid
                guard lifecycle == .connecting else { return }
                closeWithError(GCDAsyncSocketError.connectTimeout)
            }
        }
        begin()
    }

    /// `"name"`, `"name:port"`, `":port"` or an IP (IPv6 in brackets when a port follows) → local addresses.
    static func localBindAddresses(_ interface: String?, _ configuration: Configuration) throws -> [SocketAddress] {
        guard let interface, !interface.isEmpty else { return [] }
        var name = interface
        var port: UInt16 = 0
        if let colon = interface.lastIndex(of: ":"), interface.filter({ $0 == ":" }).count == 1 || interface.hasPrefix("[") {
            guard let parsed = UInt16(interface[interface.index(after: colon)...]) else {
                throw GCDAsyncSocketError(.badParamError, "Invalid port in interface: \(interface)")
            }
            port = parsed
            name = String(interface[..<colon].filter { $0 != "[" && $0 != "]" })
        }
        if name.isEmpty {
            var any: [SocketAddress] = []
            if configuration.ipv4Enabled { any.append(.any(family: AF_INET, port: port)) }
            if configuration.ipv6Enabled { any.append(.any(family: AF_INET6, port: port)) }
            return any
        }
        return try listenAddresses(interface: name, port: port, configuration)
    }

    // MARK: Attempts

    func beginAttempts(_ addresses: [SocketAddress]) {
        guard lifecycle == .connecting, let attempts = connecting else { return }
        attempts.remaining = Resolver.happyEyeballsOrder(
            addresses, ipv4: config.ipv4Enabled || addresses.allSatisfy(\.isUnix), ipv6: config.ipv6Enabled,
            preferIPv4: config.ipv4PreferredOverIPv6)
        if addresses.allSatisfy(\.isUnix) { attempts.remaining = addresses }
        guard !attempts.remaining.isEmpty else {
            closeWithError(GCDAsyncSocketError(.badConfigError, "No address of an enabled IP family"))
            return
        }
        startNextAttempt()
    }

    /// Starts the next address. A failure to even start moves on at once; a started attempt gets
    /// `alternateAddressDelay` before the next one starts beside it.
    func startNextAttempt() {
        guard lifecycle == .connecting, let attempts = connecting else { return }
        eventLoop.cancelOnLoop(attempts.alternateTimer)
        attempts.alternateTimer = .invalid
        while !attempts.remaining.isEmpty {
            let address = attempts.remaining.removeFirst()
            switch openAttempt(address, attempts) {
            case .failure(let error):
                attempts.lastError = error
                continue
            case .success(let attempt):
                attempts.inFlight.append(attempt)
                if !attempts.remaining.isEmpty {
                    attempts.alternateTimer = eventLoop.scheduleOnLoop(at: Self.deadline(after: config.alternateAddressDelay)) { [self] in
                        connecting?.alternateTimer = .invalid
                        startNextAttempt()
                    }
                }
                return
            }
        }
        if attempts.inFlight.isEmpty {
            closeWithError(attempts.lastError.map { GCDAsyncSocketError($0) }
                ?? GCDAsyncSocketError(.otherError, "Could not connect to any address"))
        }
    }

    /// Creates, binds and starts connecting one socket, watched for writability.
    private func openAttempt(_ address: SocketAddress, _ attempts: ConnectAttempts) -> Result<ConnectAttempt, SyscallError> {
        let fd: Int32
        do {
            fd = try Syscall.socket(domain: address.family)
        } catch { return .failure(error) }
        do throws(SyscallError) {
            try config.options.applyToStream(fd, isUnix: address.isUnix)
            if let local = attempts.local.first(where: { $0.family == address.family }) {
                try local.withSockAddr { sa, length throws(SyscallError) in try Syscall.bind(fd, sa, length) }
            } else if !attempts.local.isEmpty {
                throw SyscallError(.bind, errno: .addressFamilyNotSupported)
            }
            // Connected at once (a Unix socket) or in progress: either way epoll reports the socket writable,
            // and the connection is established from there, never inside the caller's connect() call.
            _ = try address.withSockAddr { sa, length throws(SyscallError) in try Syscall.connect(fd, sa, length) }
            let attempt = ConnectAttempt(fd: fd, address: address, owner: self)
            do {
                try eventLoop.register(fd: fd, interest: .writable, handler: attempt)
            } catch {
                throw SyscallError(.epollCtl, errno: .badFileDescriptor)
            }
            return .success(attempt)
        } catch {
            try? Syscall.close(fd)
            return .failure(error)
        }
    }

    /// An attempt's socket became writable (or failed): it connected, or the next address gets its turn.
    func attemptReady(_ attempt: ConnectAttempt) {
        guard lifecycle == .connecting, let attempts = connecting else { return }
        let code = (try? Syscall.option(attempt.fd, level: SOL_SOCKET, name: SO_ERROR)) ?? EBADF
        attempts.inFlight.removeAll { $0 === attempt }
        if code == 0 {
            connectionEstablished(attempt.fd, to: attempt.address)
            return
        }
        try? eventLoop.close(fd: attempt.fd)
        attempts.lastError = SyscallError(.connect, errno: Errno(rawValue: code))
        startNextAttempt()
    }

    /// The connection is up: close the other attempts, watch it as the connection (the attempt's registration
    /// changes hands), tell the delegate, then run the reads and writes queued while connecting.
    private func connectionEstablished(_ fd: Int32, to address: SocketAddress) {
        connecting?.cancel(on: eventLoop)
        connecting = nil
        eventLoop.cancelOnLoop(connectTimer)
        connectTimer = .invalid
        lifecycle = .open
        self.fd = fd
        if address.isUnix { traits.insert(.unix) }
        do {
            // One `epoll_ctl(MOD)` from the attempt's EPOLLOUT to what a connection with no read yet is
            // watched for (see `updateInterest`), so the pump after the callback finds nothing to change.
            try eventLoop.reassign(fd: fd, interest: [.readable, .readHangup], handler: self)
        } catch {
            // Still the attempt's registration unless the loop lost it; either way the descriptor closes once.
            if eventLoop.interest(of: fd) != nil { try? eventLoop.close(fd: fd) } else { try? Syscall.close(fd) }
            self.fd = -1
            closeWithError(GCDAsyncSocketError(.otherError, "\(error)"))
            return
        }
        publish(status: .connected, fd: fd, onlyFor: config.claim)
        // Calls the delegate makes from the callback join this pump instead of deferring one.
        pumpState.insert(.pumping)
        if address.isUnix {
            let url = URL(fileURLWithPath: address.unixPath ?? "")
            notify { $0.socket($1, didConnectTo: url) }
        } else {
            let host = address.host ?? ""
            let port = address.port
            notify { $0.socket($1, didConnectToHost: host, port: port) }
        }
        pumpState.remove([.pumping, .again])
        pump()
    }
}

/// The connection attempts of one connect: addresses not yet tried, sockets in flight, the Happy Eyeballs timer.
final class ConnectAttempts {
    var remaining: [SocketAddress] = []
    var inFlight: [ConnectAttempt] = []
    var alternateTimer = TimerID.invalid
    var lastError: SyscallError?
    let local: [SocketAddress]

    init(local: [SocketAddress]) { self.local = local }

    /// Closes every attempt still in flight and stops the timer.
    func cancel(on loop: EventLoop) {
        loop.cancelOnLoop(alternateTimer)
        alternateTimer = .invalid
        for attempt in inFlight { try? loop.close(fd: attempt.fd) }
        inFlight = []
        remaining = []
    }
}

/// The handler of one nonblocking connect in flight.
final class ConnectAttempt: LoopIOHandler {
    let fd: Int32
    let address: SocketAddress
    let owner: GCDAsyncSocket

    init(fd: Int32, address: SocketAddress, owner: GCDAsyncSocket) {
        self.fd = fd
        self.address = address
        self.owner = owner
    }

    func handleIO(_ events: IOEvents) {
        owner.attemptReady(self)
    }

    func loopWillShutDown() {
        owner.closeWithError(GCDAsyncSocketError.loopShutDown)
    }
}
