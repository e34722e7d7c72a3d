import Foundation
import Glibc

/// A raw socket peer driven by its own thread: it sends what the script queues (each piece with its own
/// `send`, so the bytes leave in the script's splits) and receives everything that arrives, at the same
/// time. A single blocking thread could not: an accepted socket under test stops reading while its own
/// writes back up, so a peer that blocks in `send` before it reads would wait for ever.
final class RawPeerPump: @unchecked Sendable {
    private let socket: RawSocket
    private let changes: ModelChanges
    /// Wakes the thread when the script queues something (a pipe, closed by `stop`).
    private let wakeFDs: [Int32]
    private let finished = Signal()

    private struct State {
        var sends: [Data] = []
        var sentOfFirst = 0
        var shutdownRequested = false
        var shutDown = false
        var received = Data()
        var end: RawSocket.End?
        var sendError: Int32?
        var stopping = false
    }

    private let state = Locked(State())

    init(_ socket: RawSocket, tcp: Bool, changes: ModelChanges) throws {
        self.socket = socket
        self.changes = changes
        var fds: [Int32] = [-1, -1]
        try check("pipe", pipe(&fds))
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        wakeFDs = fds
        _ = fcntl(socket.fd, F_SETFL, fcntl(socket.fd, F_GETFL) | O_NONBLOCK)
        if tcp { socket.setNoDelay() }
        Thread { [self] in
            run()
            finished.fire()
        }.start()
    }

    func send(_ data: Data) {
        state.withLock { $0.sends.append(data) }
        wake()
    }

    /// `shutdown(SHUT_WR)` once everything queued has been sent.
    func shutdownWrite() {
        state.withLock { $0.shutdownRequested = true }
        wake()
    }

    /// What arrived from `offset` on, and how the stream ended if it has.
    func received(from offset: Int) -> (Data, RawSocket.End?, sendError: Int32?) {
        state.withLock { state in
            (state.received.count > offset ? Data(state.received[offset...]) : Data(), state.end, state.sendError)
        }
    }

    /// Stops the thread (bounded wait) and closes the socket and the pipe.
    func stop() {
        state.withLock { $0.stopping = true }
        wake()
        _ = finished.wait()
        socket.close()
        for fd in wakeFDs { Glibc.close(fd) }
    }

    private func wake() {
        var one: UInt8 = 1
        _ = Glibc.write(wakeFDs[1], &one, 1)
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let (stopping, wantsSend, wantsReceive) = state.withLock { state -> (Bool, Bool, Bool) in
                if state.sends.isEmpty && state.shutdownRequested && !state.shutDown {
                    state.shutDown = true
                    _ = Glibc.shutdown(socket.fd, Int32(SHUT_WR))
                }
                return (state.stopping, !state.sends.isEmpty && state.sendError == nil, state.end == nil)
            }
            if stopping { return }
            var fds = [
                pollfd(fd: socket.fd, events: Int16(wantsReceive ? POLLIN : 0) | Int16(wantsSend ? POLLOUT : 0), revents: 0),
                pollfd(fd: wakeFDs[0], events: Int16(POLLIN), revents: 0),
            ]
            // The timeout only bounds how long a lost wakeup could delay the thread; the pipe wakes it.
            _ = poll(&fds, 2, 1000)
            if fds[1].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                _ = Glibc.read(wakeFDs[0], &drain, drain.count)
            }
            if wantsReceive && fds[0].revents != 0 { receive(&buffer) }
            if wantsSend { sendQueued() }
        }
    }

    private func receive(_ buffer: inout [UInt8]) {
        while true {
            let n = Glibc.recv(socket.fd, &buffer, buffer.count, 0)
            let code = errno
            if n < 0 && code == EINTR { continue }
            if n < 0 && (code == EAGAIN || code == EWOULDBLOCK) { return }
            state.withLock { state in
                if n > 0 {
                    state.received.append(contentsOf: buffer[0..<n])
                } else {
                    state.end = n == 0 ? .eof : .error(code)
                }
            }
            changes.bump()
            if n <= 0 { return }
        }
    }

    private func sendQueued() {
        while true {
            let done = state.withLock { state -> Bool in
                guard let first = state.sends.first, state.sendError == nil else { return true }
                let n = first.withUnsafeBytes { raw in
                    Glibc.send(socket.fd, raw.baseAddress! + state.sentOfFirst, raw.count - state.sentOfFirst, Int32(MSG_NOSIGNAL))
                }
                if n < 0 {
                    if errno == EINTR { return false }
                    if errno != EAGAIN && errno != EWOULDBLOCK { state.sendError = errno }
                    return true
                }
                state.sentOfFirst += n
                if state.sentOfFirst == first.count {
                    state.sends.removeFirst()
                    state.sentOfFirst = 0
                }
                return false
            }
            if done { return }
        }
    }
}
