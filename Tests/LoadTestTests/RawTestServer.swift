import Dispatch
import Glibc
import SharedTestSupport
import XCTest

/// A call the raw test server could not make.
struct RawServerError: Error {
    let call: String
    let errno: Int32
}

/// A small TCP server on its own thread, built from raw blocking sockets and `poll(2)`, that echoes in ways a
/// real server might and a well-behaved one would not: one byte per `send`, several replies in one `send`,
/// closing or resetting mid-run, corrupting a byte. It shares no code with the client under test.
///
/// `stop()` wakes the thread through a pipe, waits for it (bounded) and leaves no descriptor open.
final class RawTestServer: @unchecked Sendable {
    enum Behavior {
        /// Echo everything, in `send`s of at most `chunk` bytes (1: every byte on its own).
        case echo(chunk: Int)
        /// Hold received bytes until at least `bytes` are waiting, then echo them in one `send`.
        case batch(bytes: Int)
        /// Echo the first `bytes` bytes of each connection, then end it: with an RST if `reset`, else with a FIN
        /// (`shutdown(SHUT_WR)`, so requests already on their way cannot turn the FIN into an RST) and ignore
        /// whatever else arrives.
        case closeAfter(bytes: Int, reset: Bool)
        /// Echo everything, with the byte at stream offset `offset` of each connection flipped.
        case corruptAt(offset: Int)
    }

    private struct Client {
        var echoed = 0
        var held: [UInt8] = []
        /// Sent its FIN: nothing more is echoed.
        var ended = false
    }

    let port: UInt16
    private let behavior: Behavior
    private let listener: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)
    private var stopped = false

    /// Listens on `host` (127.0.0.1 or ::1), a free port.
    init(_ behavior: Behavior, host: String = "127.0.0.1") throws {
        self.behavior = behavior
        let family = host.contains(":") ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RawServerError(call: "socket", errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var bound: Int32
        if family == AF_INET6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            inet_pton(AF_INET6, host, &address.sin6_addr)
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, host, &address.sin_addr)
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        if bound == 0 { bound = listen(fd, 128) }
        guard bound == 0 else {
            let error = errno
            close(fd)
            throw RawServerError(call: "bind/listen", errno: error)
        }
        listener = fd
        port = Self.localPort(of: fd)
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else {
            let error = errno
            close(fd)
            throw RawServerError(call: "pipe2", errno: error)
        }
        wakeRead = pipeEnds[0]
        wakeWrite = pipeEnds[1]
        DispatchQueue.global().async { [self] in
            serve()
            finished.signal()
        }
    }

    /// Stops the thread and closes every descriptor it had.
    func stop() {
        guard !stopped else { return }
        stopped = true
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        XCTAssertEqual(finished.wait(timeout: .now() + .seconds(10)), .success, "the raw test server did not stop")
        close(wakeWrite)
    }

    /// The port a bound socket got.
    static func localPort(of fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return withUnsafeBytes(of: &storage) { raw in
            // sin_port and sin6_port are both at offset 2, in network byte order.
            UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
        }
    }

    private func serve() {
        var clients: [Int32: Client] = [:]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        serving: while true {
            let order = Array(clients.keys)
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            fds += order.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&fds, nfds_t(fds.count), -1) >= 0 else {
                if errno == EINTR { continue }
                break
            }
            if fds[0].revents != 0 { break serving }
            if fds[1].revents != 0 {
                let fd = accept(listener, nil, nil)
                if fd >= 0 {
                    var one: Int32 = 1
                    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    clients[fd] = Client()
                }
            }
            for (i, fd) in order.enumerated() where fds[i + 2].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0, var client = clients[fd] else {
                    close(fd)
                    clients[fd] = nil
                    continue
                }
                if handle(fd, &client, Array(buffer[0..<n])) {
                    clients[fd] = client
                } else {
                    close(fd)
                    clients[fd] = nil
                }
            }
        }
        for fd in clients.keys { close(fd) }
        close(listener)
        close(wakeRead)
    }

    /// Reacts to `data` from a client; false to close it.
    private func handle(_ fd: Int32, _ client: inout Client, _ data: [UInt8]) -> Bool {
        var data = data
        switch behavior {
        case .echo(let chunk):
            var done = 0
            while done < data.count {
                let n = min(chunk, data.count - done)
                guard sendAll(fd, Array(data[done..<(done + n)])) else { return false }
                done += n
            }
        case .batch(let bytes):
            client.held += data
            if client.held.count >= bytes {
                guard sendAll(fd, client.held) else { return false }
                client.held = []
            }
        case .closeAfter(let bytes, let reset):
            if client.ended { return true }
            let n = min(data.count, bytes - client.echoed)
            guard sendAll(fd, Array(data[0..<n])) else { return false }
            client.echoed += n
            if client.echoed >= bytes {
                guard reset else {
                    shutdown(fd, Int32(SHUT_WR))
                    client.ended = true
                    return true
                }
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                return false
            }
        case .corruptAt(let offset):
            if offset >= client.echoed && offset < client.echoed + data.count {
                data[offset - client.echoed] ^= 0x40
            }
            guard sendAll(fd, data) else { return false }
            client.echoed += data.count
        }
        return true
    }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + done, $0.count - done, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            done += n
        }
        return true
    }
}

/// The process's open descriptors by what they point at, leaving out eventfds and pipes: an event loop's
/// wakeup eventfd is closed when the loop object is freed, which a loop thread may be finishing just now, and
/// Foundation's `Process` closes the pipes of an earlier test's child on a thread of its own, whenever that
/// child's monitoring ends. A run opens no pipe; every descriptor it does open (sockets, epoll, timerfd) is
/// closed deterministically by the run itself.
func openDescriptorsExceptEventfds() -> [String] {
    openDescriptors().filter { $0.value != "anon_inode:[eventfd]" && !$0.value.hasPrefix("pipe:") }
        .map { "\($0.key) \($0.value)" }.sorted()
}
