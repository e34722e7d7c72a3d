import CEpollShim

extension EventLoop {
    /// Starts watching `fd` for `interest`, handing readiness to `handler`. Call on the loop.
    ///
    /// The loop owns the descriptor from now on: it is closed by ``close(fd:)``, or by the loop at shutdown,
    /// exactly once. ``IOEvents/error`` and ``IOEvents/hangup`` are always reported.
    public func register(fd: Int32, interest: IOEvents, handler: any IOEventHandler) throws(EventLoopError) {
        try register(fd: fd, interest: interest, handler: IOEventHandlerBox(handler))
    }

    /// ``register(fd:interest:handler:)`` for the package's own handlers, called without a box.
    package func register(fd: Int32, interest: IOEvents, handler: any LoopIOHandler) throws(EventLoopError) {
        preconditionInEventLoop()
        guard !isShutDownOnLoop else { throw .shutDown }
        guard fd >= 0 else { throw .system(SyscallError(.epollCtl, errno: .badFileDescriptor)) }
        guard !registrations.isRegistered(fd) else { throw .alreadyRegistered(fd: fd) }
        let generation = registrations.add(fd, interest: interest, handler: handler)
        do {
            try Syscall.epollCtl(epollFD, CEPOLL_CTL_ADD, fd, events: interest.rawValue,
                                 data: Self.eventData(fd: fd, generation: generation))
        } catch {
            registrations.remove(fd)
            throw .system(error)
        }
    }

    /// Changes what `fd` is watched for; no system call when the interest is unchanged. Call on the loop.
    public func setInterest(_ interest: IOEvents, fd: Int32) throws(EventLoopError) {
        preconditionInEventLoop()
        guard let current = registrations.interest(of: fd) else { throw .notRegistered(fd: fd) }
        guard current != interest else { return }
        do {
            try Syscall.epollCtl(epollFD, CEPOLL_CTL_MOD, fd, events: interest.rawValue,
                                 data: Self.eventData(fd: fd, generation: registrations.generation(of: fd)))
        } catch { throw .system(error) }
        registrations.setInterest(fd, interest)
    }

    /// Hands `fd`'s readiness to `handler` from now on, watched for `interest`: at most one `epoll_ctl(MOD)`
    /// where deregistering and registering again would make two calls (a connect attempt's descriptor that
    /// becomes the connection). Events already fetched for `fd` in this batch go to the new handler. Call on
    /// the loop.
    package func reassign(fd: Int32, interest: IOEvents, handler: any LoopIOHandler) throws(EventLoopError) {
        preconditionInEventLoop()
        guard registrations.isRegistered(fd) else { throw .notRegistered(fd: fd) }
        registrations.setHandler(fd, handler)
        try setInterest(interest, fd: fd)
    }

    /// The interest `fd` is registered with, or `nil` if it is not registered. Call on the loop.
    public func interest(of fd: Int32) -> IOEvents? {
        preconditionInEventLoop()
        return registrations.interest(of: fd)
    }

    /// Stops watching `fd` and gives it back to the caller, open. Events already fetched for it are dropped.
    public func deregister(fd: Int32) throws(EventLoopError) {
        preconditionInEventLoop()
        guard registrations.isRegistered(fd) else { throw .notRegistered(fd: fd) }
        registrations.remove(fd)
        do {
            try Syscall.epollCtl(epollFD, CEPOLL_CTL_DEL, fd, events: 0, data: 0)
        } catch { throw .system(error) }
    }

    /// Stops watching `fd` and closes it. Events already fetched for it are dropped. Call on the loop.
    ///
    /// The descriptor is closed even if the kernel reports an error, which is then thrown.
    public func close(fd: Int32) throws(EventLoopError) {
        try close(fd: fd, soleReference: false)
    }

    /// ``close(fd:)``; `soleReference`: the caller knows no other descriptor refers to the same open file
    /// (one it made with `SOCK_CLOEXEC` and never handed out), so the close itself takes it out of the epoll
    /// set and the `epoll_ctl(DEL)` is skipped, as nginx does: one system call less per connection. A
    /// `fork` whose child has not yet reached `exec` still holds a copy; until it does, the kernel may
    /// report the closed descriptor's events with its old generation, which the loop drops as stale.
    package func close(fd: Int32, soleReference: Bool) throws(EventLoopError) {
        preconditionInEventLoop()
        guard registrations.isRegistered(fd) else { throw .notRegistered(fd: fd) }
        registrations.remove(fd)
        // Otherwise removed explicitly: close() alone would leave it in the epoll set if the file were
        // shared (dup, fork).
        let unwatched = soleReference ? .success(()) : Result { () throws(SyscallError) in
            try Syscall.epollCtl(epollFD, CEPOLL_CTL_DEL, fd, events: 0, data: 0)
        }
        do {
            try Syscall.close(fd)
        } catch { throw .system(error) }
        if case .failure(let error) = unwatched { throw .system(error) }
    }

    /// The epoll user data for a registration: generation in the high half, fd in the low half.
    @inline(__always)
    static func eventData(fd: Int32, generation: UInt32) -> UInt64 {
        UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
    }
}
