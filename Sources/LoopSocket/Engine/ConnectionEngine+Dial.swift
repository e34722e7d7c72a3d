import CEpollShim
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// Connection attempts: Happy Eyeballs across the resolved addresses, the first to connect becoming the
/// connection.
extension ConnectionEngine {
    /// Connects the socket claimed with `configuration` to `host` on `port` from the `local` addresses: a
    /// numeric host (or `localhost`) at once, any other name resolved off the loop first. An answer that
    /// comes once the connect is over (closed, or the socket claimed again) is dropped. Throws, the claim
    /// given back, if the loop is shut down. Any thread.
    func connect(toHost host: String, port: UInt16, configuration: Configuration, timeout: TimeInterval,
                 local: [SocketAddress]) throws(ConnectionError) {
        var configuration = configuration
        configuration.connectHost = host
        if let immediate = Resolver.immediate(host, port: port) {
            return try connect(to: immediate, configuration: configuration, timeout: timeout, local: local)
        }
        let resolving = configuration
        try startOnLoop { [self] in
            startConnecting(configuration: resolving, timeout: timeout, local: local) { [self] in
                offLoop({ Resolver.resolve(host, port: port) }) { [self] resolved in
                    guard isConnecting else { return }
                    switch resolved {
                    case .success(let addresses): beginAttempts(addresses)
                    case .failure(let error): closeWithError(ConnectionError(passingThrough: error))
                    }
                }
            }
        }
    }

    /// Connects the socket claimed with `configuration` to the first of `addresses` that answers (Happy
    /// Eyeballs), as ``connect(toHost:port:configuration:timeout:local:)``. Any thread.
    func connect(to addresses: [SocketAddress], configuration: Configuration, timeout: TimeInterval,
                 local: [SocketAddress]) throws(ConnectionError) {
        try startOnLoop { [self] in
            startConnecting(configuration: configuration, timeout: timeout, local: local) { [self] in beginAttempts(addresses) }
        }
    }

    /// Starts a connect on the loop: the lifecycle goes `idle` → `connecting`, with the whole connect's timer;
    /// `begin` then starts the attempts (at once, or once DNS has answered).
    private func startConnecting(configuration: Configuration, timeout: TimeInterval, local: [SocketAddress], then begin: () -> Void) {
        guard case .proceed = connectionState.handle(.connectAsked) else { return }
        config = configuration
        connecting = ConnectAttempts(local: local)
        if timeout >= 0 {
            connectTimer = eventLoop.scheduleOnLoop(at: Self.deadline(after: timeout)) { [self] in
                connectTimer = .invalid
                guard isConnecting else { return }
                closeWithError(ConnectionError(.connectTimeout))
            }
        }
        begin()
    }

    // MARK: Attempts

    func beginAttempts(_ addresses: [SocketAddress]) {
        guard isConnecting, let attempts = connecting else { return }
        attempts.remaining = Resolver.happyEyeballsOrder(
            addresses, ipv4: config.ipv4Enabled || addresses.allSatisfy(\.isUnix), ipv6: config.ipv6Enabled,
            preferIPv4: config.ipv4PreferredOverIPv6)
        if addresses.allSatisfy(\.isUnix) { attempts.remaining = addresses }
        guard !attempts.remaining.isEmpty else {
            closeWithError(ConnectionError(.noEnabledAddress))
            return
        }
        startNextAttempt()
    }

    /// Starts the next address. A failure to even start moves on at once; a started attempt gets
    /// `alternateAddressDelay` before the next one starts beside it.
    func startNextAttempt() {
        guard isConnecting, let attempts = connecting else { return }
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
            closeWithError(attempts.lastError.map(ConnectionError.init) ?? ConnectionError(.noAddressConnected))
        }
    }

    /// Creates, binds and starts connecting one socket, watched for writability.
    private func openAttempt(_ address: SocketAddress, _ attempts: ConnectAttempts) -> Result<ConnectAttempt, SyscallError> {
        let fd: Int32
        do {
            fd = try Syscall.socket(domain: address.family)
        } catch { return .failure(error) }
        let attempt = ConnectAttempt(fd: fd, address: address, owner: self)
        do throws(SyscallError) {
            try config.options.applyToStream(fd, isUnix: address.isUnix)
            if let local = attempts.local.first(where: { $0.family == address.family }) {
                try local.withSockAddr { sa, length throws(SyscallError) in try Syscall.bind(fd, sa, length) }
            } else if !attempts.local.isEmpty {
                throw SyscallError(.bind, errno: .addressFamilyNotSupported)
            }
            // Counted before connect(), so that the listener records its accept whichever side gets there first.
            attempt.startDial()
            // Connected at once (a Unix socket) or in progress: either way epoll reports the socket writable,
            // and the connection is established from there, never inside the caller's connect() call.
            _ = try address.withSockAddr { sa, length throws(SyscallError) in try Syscall.connect(fd, sa, length) }
            do throws(EventLoopError) {
                try eventLoop.register(fd: fd, interest: .writable, handler: attempt)
            } catch {
                guard case .system(let failure) = error else {
                    // A loop shutting down refuses it (the socket closes with it anyway); anything else is
                    // the library's own fault with a descriptor it just made.
                    if error != .shutDown { LibraryFault.report("registering a connect attempt", error) }
                    throw SyscallError(.epollCtl, errno: .badFileDescriptor)
                }
                throw failure
            }
            return .success(attempt)
        } catch {
            attempt.endDial(on: eventLoop)
            LibraryFault.close(fd)
            return .failure(error)
        }
    }

    /// An attempt's socket became writable (or failed): it connected, or the next address gets its turn.
    func attemptReady(_ attempt: ConnectAttempt) {
        guard isConnecting, let attempts = connecting else { return }
        let code = (try? Syscall.option(attempt.fd, level: SOL_SOCKET, name: SO_ERROR)) ?? EBADF
        if code == 0 && attempt.dialsThisProcess && holdForAccept(attempt, attempts) { return }
        attempt.endDial(on: eventLoop)
        attempts.inFlight.removeAll { $0 === attempt }
        if code == 0 {
            connectionEstablished(attempt.fd, to: attempt.address)
            return
        }
        LibraryFault.close(attempt.fd, on: eventLoop)
        attempts.lastError = SyscallError(.connect, errno: Errno(rawValue: code))
        startNextAttempt()
    }

    /// The attempt connected to a listening address of this process: its report waits until that listener
    /// has reported the accept (``LocalAccepts``), at most ``LocalAccepts/holdLimit``. The attempt stays in
    /// flight meanwhile, watched for nothing (a close or the loop's shutdown still closes it); the other
    /// attempts and the connect's timer go, as the connection is made. False: report it now (the peer is
    /// another host's, or the accept was reported already).
    private func holdForAccept(_ attempt: ConnectAttempt, _ attempts: ConnectAttempts) -> Bool {
        guard let local = SocketAddress.of(fd: attempt.fd, peer: false).flatMap(LocalEndpoint.init),
              let remote = LocalEndpoint(attempt.address),
              remote.isLoopback || local.sameAddress(as: remote) else { return false }
        let loop = eventLoop
        let waiting = UncheckedSendable(attempt)
        guard LocalAccepts.shared.mustAwaitAccept(of: local, resume: { [self] in
            try? loop.execute { [self] in acceptAwaited(waiting.value) }
        }) else { return false }
        attempt.held = local
        do {
            try eventLoop.setInterest([], fd: attempt.fd)
        } catch {
            attempt.endDial(on: eventLoop)
            return false
        }
        for other in attempts.inFlight where other !== attempt {
            other.endDial(on: eventLoop)
            LibraryFault.close(other.fd, on: eventLoop)
        }
        attempts.inFlight = [attempt]
        attempts.remaining = []
        eventLoop.cancelOnLoop(attempts.alternateTimer)
        attempts.alternateTimer = .invalid
        eventLoop.cancelOnLoop(connectTimer)
        connectTimer = .invalid
        attempt.holdTimer = eventLoop.scheduleOnLoop(at: Self.deadline(after: LocalAccepts.holdLimit)) { [self] in
            attempt.holdTimer = .invalid
            acceptAwaited(attempt)
        }
        return true
    }

    /// The listener reported the accept a held attempt waited for (or the hold ran out): report the connect.
    private func acceptAwaited(_ attempt: ConnectAttempt) {
        guard attempt.held != nil, isConnecting, let attempts = connecting,
              attempts.inFlight.contains(where: { $0 === attempt }) else { return }
        attempt.endDial(on: eventLoop)
        attempts.inFlight.removeAll { $0 === attempt }
        connectionEstablished(attempt.fd, to: attempt.address)
    }

    /// The connection is up: close the other attempts, watch it as the connection (the attempt's registration
    /// changes hands), tell the delegate, then run the reads and writes queued while connecting.
    private func connectionEstablished(_ fd: Int32, to address: SocketAddress) {
        connecting?.cancel(on: eventLoop)
        connecting = nil
        eventLoop.cancelOnLoop(connectTimer)
        connectTimer = .invalid
        let connected = connectionState.handle(.connected)
        precondition(connected == .proceed, "connectionEstablished runs only while connecting")
        eventLoop.countSocket(CEPOLL_STREAM_OPENED)
        eventLoop.countSocket(CEPOLL_STREAM_CONNECTED)
        self.fd = fd
        traits.insert(.soleReference)
        if address.isUnix { traits.insert(.unix) }
        do {
            // One `epoll_ctl(MOD)` from the attempt's EPOLLOUT to what a connection with no read yet is
            // watched for (see `updateInterest`), so the pump after the callback finds nothing to change.
            try eventLoop.reassign(fd: fd, interest: [.readable, .readHangup], handler: self)
        } catch {
            // Still the attempt's registration unless the loop lost it; either way the descriptor closes once.
            if eventLoop.interest(of: fd) != nil { LibraryFault.close(fd, on: eventLoop) } else { LibraryFault.close(fd) }
            self.fd = -1
            closeWithError(ConnectionError.loop(error))
            return
        }
        publish(connectionState, fd: fd, onlyFor: config.generation)
        // Calls the delegate makes from the callback join this pump instead of deferring one.
        pumpState.insert(.pumping)
        if address.isUnix {
            let url = URL(fileURLWithPath: address.unixPath ?? "")
            sinkReport(.connectedToURL(url))
        } else {
            let host = address.host ?? ""
            let port = address.port
            sinkReport(.connected(host: host, port: port))
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
        for attempt in inFlight {
            attempt.endDial(on: loop)
            LibraryFault.close(attempt.fd, on: loop)
        }
        inFlight = []
        remaining = []
    }
}

/// The handler of one nonblocking connect in flight.
final class ConnectAttempt: OwnedDescriptor {
    let fd: Int32
    let address: SocketAddress
    let owner: ConnectionEngine
    /// Counted as a connect to a listener of this process (``LocalAccepts``), until ``endDial(on:)``.
    private(set) var dialsThisProcess = false
    /// Connected, its report held for the accept of this local address.
    var held: LocalEndpoint?
    /// The bound on that hold.
    var holdTimer = TimerID.invalid

    init(fd: Int32, address: SocketAddress, owner: ConnectionEngine) {
        self.fd = fd
        self.address = address
        self.owner = owner
    }

    /// Counts the connect if its address may be a listener of this process. Just before `connect()`.
    func startDial() {
        guard let destination = LocalEndpoint(address) else { return }
        dialsThisProcess = LocalAccepts.shared.dialStarting(to: destination)
    }

    /// The attempt is over (connected and reported, failed, or closed): the count and any hold end. Once.
    func endDial(on loop: EventLoop) {
        guard dialsThisProcess else { return }
        dialsThisProcess = false
        loop.cancelOnLoop(holdTimer)
        holdTimer = .invalid
        if let held {
            self.held = nil
            LocalAccepts.shared.stopAwaiting(held)
        }
        LocalAccepts.shared.dialEnded()
    }

    var engine: ConnectionEngine? { owner }

    func ready(_ events: IOEvents, for engine: ConnectionEngine) {
        engine.attemptReady(self)
    }
}
