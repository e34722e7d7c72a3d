import EpollLoop
import Glibc

/// Opening a TCP connection on a worker's loop, for the connections that talk to the kernel themselves
/// (``LoopTCPSocket``): the steps, and the words and kinds of their failures, once.
enum LoopConnect {
    /// A nonblocking socket to `address` with `TCP_NODELAY`, connecting (or connected already), registered with
    /// `loop` for writability with `handler`. Either way epoll reports the socket writable when the connect is
    /// done, so both end in ``failure(of:)`` (and nothing settles inside the caller's start). On failure the
    /// socket is closed.
    static func start(
        _ address: ServerAddress, loop: EventLoop, handler: any LoopIOHandler
    ) throws(ConnectionFailure) -> Int32 {
        let socket: Int32
        do {
            socket = try Syscall.socket(domain: address.family)
        } catch {
            throw ConnectionFailure(ErrorKind.classify(error), "socket: \(error)")
        }
        // Requests are small and each waits for its reply: Nagle's delay would be measured as server latency.
        try? Syscall.setOption(socket, level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
        do {
            _ = try address.withSockaddr { (sockaddr, length) throws(SyscallError) in
                try Syscall.connect(socket, sockaddr, length)
            }
        } catch {
            try? Syscall.close(socket)
            throw ConnectionFailure(error)
        }
        do {
            try loop.register(fd: socket, interest: .writable, handler: handler)
        } catch {
            try? Syscall.close(socket)
            throw ConnectionFailure(ErrorKind.classify(error), "register: \(error)")
        }
        return socket
    }

    /// Why the connect on `fd` failed, once epoll reported it writable (`SO_ERROR`); nil when it is up.
    static func failure(of fd: Int32) -> ConnectionFailure? {
        let error: Int32
        do {
            error = try Syscall.option(fd, level: SOL_SOCKET, name: SO_ERROR)
        } catch {
            return ConnectionFailure(ErrorKind.classify(error), "getsockopt(SO_ERROR): \(error)")
        }
        guard error != 0 else { return nil }
        return ConnectionFailure(SyscallError(.connect, errno: Errno(rawValue: error)))
    }
}
