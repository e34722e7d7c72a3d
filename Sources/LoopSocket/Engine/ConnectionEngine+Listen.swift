import CEpollShim
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// Accepting: descriptors taken from the listening sockets, shed at the descriptor limit, and handed to a
/// new socket on the next loop of the group, which starts only once `didAcceptNewSocket` has run.
extension ConnectionEngine {
    /// Opens a listening descriptor on each of `addresses` (a port 0 becomes the one the first was given, the
    /// same for all) and starts listening on the socket claimed with `configuration`. On failure the claim is
    /// given back and every descriptor opened closed. Any thread.
    func listen(on addresses: [SocketAddress], configuration: Configuration) throws(ConnectionError) {
        var listening: [(Int32, SocketAddress)] = []
        do throws(ConnectionError) {
            var chosenPort = addresses.first?.port ?? 0
            for var address in addresses {
                if chosenPort != 0 { address.port = chosenPort }
                let fd = try Self.openListener(address, configuration.options)
                listening.append((fd, address))
                if chosenPort == 0, let bound = SocketAddress.of(fd: fd, peer: false) { chosenPort = bound.port }
            }
        } catch {
            for (fd, _) in listening { LibraryFault.close(fd) }
            releaseClaim()
            throw error
        }
        try startListening(listening, configuration: configuration, unixPath: nil)
    }

    /// Listens on the Unix-domain socket `address`, replacing a stale socket file left at its path; as
    /// ``listen(on:configuration:)``.
    func listen(onUnix address: SocketAddress, configuration: Configuration) throws(ConnectionError) {
        let path = address.unixPath ?? ""
        var status = stat()
        if lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFSOCK { unlink(path) }
        let fd: Int32
        do throws(ConnectionError) {
            fd = try Self.openListener(address, configuration.options)
        } catch {
            releaseClaim()
            throw error
        }
        if let mode = configuration.options.unixSocketMode { chmod(path, mode_t(mode)) }
        try startListening([(fd, address)], configuration: configuration, unixPath: path)
    }

    /// A bound, listening, nonblocking descriptor on `address`.
    static func openListener(_ address: SocketAddress, _ options: SocketOptions) throws(ConnectionError) -> Int32 {
        do throws(SyscallError) {
            let fd = try Syscall.socket(domain: address.family)
            do throws(SyscallError) {
                if address.isIPv6 { try Syscall.setOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_V6ONLY, value: 1) }
                try options.applyToListener(fd, isUnix: address.isUnix)
                try address.withSockAddr { sa, length throws(SyscallError) in try Syscall.bind(fd, sa, length) }
                try Syscall.listen(fd, backlog: options.backlog)
            } catch {
                LibraryFault.close(fd)
                throw error
            }
            return fd
        } catch {
            throw ConnectionError(error)
        }
    }

    /// Starts listening on the loop: the lifecycle goes `idle` → `listening`, each descriptor registered with
    /// its ``ListenHandler``. Throws if the loop is shut down (the descriptors are closed, the claim given back).
    private func startListening(_ listening: [(Int32, SocketAddress)], configuration: Configuration, unixPath: String?) throws(ConnectionError) {
        let addresses = listening.map { bound in SocketAddress.of(fd: bound.0, peer: false) ?? bound.1 }
        publish(.claimed(by: .listenAsked), listening: addresses)
        // In the process's table of listeners from now, not once the loop gets to it: the kernel accepts
        // connections already, and a client of this process that connects right after this call must find
        // it there (``LocalAccepts``). Each handler withdraws its own when it closes.
        let endpoints = addresses.map(LocalEndpoint.init)
        for case let endpoint? in endpoints { LocalAccepts.shared.listenerOpened(endpoint) }
        @Sendable func abandon() {
            Self.withdraw(endpoints[...])
            for (fd, _) in listening { LibraryFault.close(fd) }
            if let unixPath { unlink(unixPath) }
        }
        let started = onLoop { [self] in
            // Not idle: claimed again after an off-loop `disconnect()` published idle and before its close
            // reached the loop. That start runs; this one's descriptors go.
            guard case .proceed = connectionState.handle(.listenAsked) else { return abandon() }
            config = configuration
            unixListenPath = unixPath
            // Creates the loop's shared context now if need be: it opens the reserve descriptor that lets
            // accept shed connections at EMFILE, which could not be opened once the table is full.
            _ = context
            for (index, (fd, address)) in listening.enumerated() {
                let listener = ListenHandler(fd: fd, address: address, owner: self, announced: endpoints[index])
                do {
                    try eventLoop.register(fd: fd, interest: .readable, handler: listener)
                    listeners.append(listener)
                    let open = (listeners, unixPath)
                    withSharedState { $0.openListeners = open }
                } catch {
                    Self.withdraw(endpoints[index...])
                    LibraryFault.close(fd)
                    closeWithError(ConnectionError.loop(error))
                    return
                }
            }
        }
        if !started {
            abandon()
            releaseClaim()
            throw ConnectionError(.loopShutDown)
        }
    }

    /// Takes listening addresses whose handlers never started out of the process's table.
    private static func withdraw(_ endpoints: ArraySlice<LocalEndpoint?>) {
        for case let endpoint? in endpoints { LocalAccepts.shared.listenerClosed(endpoint) }
    }

    // MARK: Accepting

    /// Accepts what is pending (at most 64 per readiness event, to stay fair to other descriptors).
    func acceptConnections(from listener: ListenHandler) {
        for _ in 0..<64 {
            guard isListening else { return }
            // No address asked of `accept`: the peer's is wanted only by a delegate's
            // `newSocketQueueForConnection`, which asks the kernel for it (``Accepted/peer``), and parsing it
            // into every accepted connection's report cost each about 100 instructions (callgrind, churn).
            let result = Result { () throws(SyscallError) in try Syscall.accept(listener.fd, nil, nil) }
            switch result {
            case .success(.wouldBlock):
                return
            case .success(.processed(let child)):
                handOff(child, isUnix: listener.address.isUnix)
            case .failure(let error):
                switch error.errno {
                case .tooManyOpenFiles, .tooManyOpenFilesInSystem, .noBufferSpace, .noMemory:
                    shedPendingConnections(listener, error)
                    return
                case .connectionAborted, Errno(rawValue: EPROTO), Errno(rawValue: EPERM):
                    continue  // That one connection died before we took it; the next may be fine.
                default:
                    acceptFailed(error, shed: false)
                    return
                }
            }
        }
    }

    /// Out of descriptors: free the reserve, accept and close the pending connections (so their clients see
    /// a reset instead of hanging), take the reserve back, tell the delegate, and pause accepting for 100 ms.
    /// A full descriptor table never turns into a busy loop (libuv's approach plus a back-off).
    private func shedPendingConnections(_ listener: ListenHandler, _ error: SyscallError) {
        let context = self.context
        if context.reserveFD >= 0 {
            LibraryFault.close(context.reserveFD)
            context.reserveFD = -1
            for _ in 0..<64 {
                guard case .success(.processed(let child)) = Result(catching: { () throws(SyscallError) in
                    try Syscall.accept(listener.fd, nil, nil)
                }) else { break }
                LibraryFault.close(child)
            }
            context.reserveFD = (try? Syscall.openDevNull()) ?? -1
        }
        acceptFailed(error, shed: true)
        setListenerInterest([], listener)
        _ = scheduleIfStillCurrent(at: Self.deadline(after: 0.1)) { [self] in
            guard isListening else { return }
            setListenerInterest(.readable, listener)
        }
    }

    /// Tells the sink (`didFailToAcceptWithError`) and ``LoopDiagnostics`` (a line a second at most, by
    /// default) of a failed `accept`; `shed`: the pending connections were closed and accepting pauses.
    private func acceptFailed(_ error: SyscallError, shed: Bool) {
        sinkReport(.acceptFailed(ConnectionError(error)))
        let what = shed ? "; pending connections shed, accepting again in 100 ms" : ""
        LoopDiagnostics.report(LoopDiagnostic(
            category: .acceptFailure, loop: eventLoop.name, message: "\(error)\(what)"))
    }

    /// Pauses or resumes a listening descriptor; a listener whose registration the loop refuses stops.
    private func setListenerInterest(_ interest: IOEvents, _ listener: ListenHandler) {
        do {
            try eventLoop.setInterest(interest, fd: listener.fd)
        } catch {
            closeWithError(ConnectionError.loop(error))
        }
    }

    /// Hands an accepted descriptor to the sink, which makes its connection on the next loop of the group
    /// (``ConnectionReport/accepted(_:)``), sets it up here (``setUpAccepted(_:fd:isUnix:)``), tells its
    /// own side, and only then lets it run (``startAdopted()``).
    ///
    /// GCDAsyncSocket's order: `didAcceptNewSocket` comes before any callback of the new socket, and a
    /// delegate that takes the new socket over there (an ``AsyncListener`` gives it its own handler) gets
    /// every one of its events. So the connection is born with its sink and set up on the listener's loop,
    /// before any other thread knows it, and is registered with its own loop (and pumped) only once the sink
    /// has been told: inline, right after the callback; on a delegate queue, from that queue once it ran.
    /// Reads and writes queued from the callback wait in the queues meanwhile; bytes and resets wait in the
    /// kernel.
    private func handOff(_ child: Int32, isUnix: Bool) {
        sinkReport(.accepted(Accepted(fd: child, isUnix: isUnix, loop: group?.next() ?? eventLoop)))
    }

    /// Sets up `connection`, just made by the sink for descriptor `fd` this listener accepted with this
    /// listener's configuration (`configuration: config`, which its initialiser set), without running it
    /// yet. On the listener's loop.
    func setUpAccepted(_ connection: ConnectionEngine, fd: Int32, isUnix: Bool) {
        connection.withSharedState {
            $0.status = .connected
            $0.fd = fd
        }
        if connection.eventLoop === eventLoop {
            connection.cachedContext = cachedContext  // this loop's, without looking it up again
        }
        // A client of this process may be waiting for this accept (``LocalAccepts``): the peer's address
        // is asked of the kernel only while one is.
        if !isUnix {
            LocalAccepts.shared.accepted(connection, peer: SocketAddress.of(fd: fd, peer: true).flatMap(LocalEndpoint.init))
        }
        // Nothing else references the connection yet, so its loop's fields may be written from here: the
        // hand-off to its loop (or the sink's own calls into it) orders these writes before its loop reads.
        connection.prepareAdoption(fd, configuration: nil, isUnix: isUnix, accepted: true)
    }

    /// Takes over `fd`, a connected descriptor, for the socket claimed with `configuration`, and starts it
    /// on the loop. Throws, the claim given back, if the loop is shut down. Any thread.
    func adoptConnected(_ fd: Int32, isUnix: Bool, configuration: Configuration) throws(ConnectionError) {
        publish(.claimed(by: .adopted), fd: fd)
        try startOnLoop { [self] in adopt(fd, configuration: configuration, isUnix: isUnix) }
    }

    /// Takes ownership of a connected descriptor and starts watching it. Loop only.
    private func adopt(_ fd: Int32, configuration: Configuration, isUnix: Bool) {
        prepareAdoption(fd, configuration: configuration, isUnix: isUnix, accepted: false)
        registerAdopted()
    }

    /// Takes ownership of a connected descriptor without watching it yet: reads and writes may be queued,
    /// nothing runs until ``startAdopted()``. On the socket's loop, or before any other thread knows it.
    /// `configuration` nil: the one the socket was made with (an accepted connection's).
    func prepareAdoption(_ fd: Int32, configuration: Configuration?, isUnix: Bool, accepted: Bool) {
        // Not idle (claimed again before an off-loop `disconnect()`'s close reached the loop): the descriptor
        // goes, and the socket stays with the connection it has.
        guard case .proceed = connectionState.handle(.adopted) else {
            unpublish(fd)
            return LibraryFault.close(fd)
        }
        if let configuration { config = configuration }
        self.fd = fd
        if isUnix { traits.insert(.unix) }
        if accepted {
            traits.insert(.accepted)
            traits.insert(.soleReference)
        }
        try? config.options.applyToStream(fd, isUnix: isUnix)
    }

    /// Lets a socket set up by ``prepareAdoption(_:configuration:isUnix:accepted:)`` run: on its loop, at
    /// once when called there. Any thread.
    ///
    /// The sink calls it once the listener's side has been told (`didAcceptNewSocket` has run, or the
    /// connection is in an ``AsyncListener``'s `connections`): a client of this process waiting for that
    /// (``LocalAccepts``) goes on from here.
    func startAdopted() {
        if eventLoop.inEventLoop {
            registerAdopted()
        } else if !onLoop({ [self] in registerAdopted() }) {
            // The loop has shut down: nothing will ever watch or close the descriptor but us.
            let fd = self.fd
            unpublish(fd)
            LibraryFault.close(fd)
        }
        LocalAccepts.shared.acceptReported(self)
    }

    /// Registers the adopted descriptor with the loop and pumps what was queued meanwhile. Does nothing if
    /// the socket was closed before it started. Loop only.
    private func registerAdopted() {
        guard case .proceed = connectionState.handle(.registered) else { return }
        eventLoop.countSocket(CEPOLL_STREAM_OPENED)
        eventLoop.countSocket(CEPOLL_STREAM_ACCEPTED)
        do {
            // EPOLLIN armed from the start, as `updateInterest` leaves it after a read (lazily dropped if it
            // fires with no read queued): the delegate queues its first read from `didAcceptNewSocket`,
            // before this, and registering without it would cost every accepted connection an
            // `epoll_ctl(MOD)` in the common case where the bytes are not there yet.
            try eventLoop.register(fd: fd, interest: [.readable, .readHangup], handler: self)
        } catch {
            unpublish(fd)
            LibraryFault.close(fd)
            fd = -1
            closeWithError(ConnectionError.loop(error))
            return
        }
        requestPump()
    }
}

/// The handler of one listening descriptor (a socket listening on IPv4 and IPv6 has two).
final class ListenHandler: OwnedDescriptor {
    let fd: Int32
    let address: SocketAddress
    /// Weak, as GCDAsyncSocket's owner holds it: a listening socket its owner releases is deallocated,
    /// and its deinit closes this descriptor (the loop holds the handler, not the socket).
    weak var owner: ConnectionEngine?
    /// The address as bound, while it is in the process's table of listeners (``LocalAccepts``).
    private var announced: LocalEndpoint?

    init(fd: Int32, address: SocketAddress, owner: ConnectionEngine, announced: LocalEndpoint?) {
        self.fd = fd
        self.address = address
        self.owner = owner
        self.announced = announced
    }

    var engine: ConnectionEngine? { owner }

    func ready(_ events: IOEvents, for engine: ConnectionEngine) {
        engine.acceptConnections(from: self)
    }

    func close(on loop: EventLoop) {
        if let announced {
            self.announced = nil
            LocalAccepts.shared.listenerClosed(announced)
        }
        LibraryFault.close(fd, on: loop, "closing a listening descriptor")
    }
}
