// udp-echo-server: echoes every datagram to its sender, the GCDAsyncUdpSocket way, on the project's event loops.
//
//     udp-echo-server --port 9000 [--host 127.0.0.1] [--loops N] [--reuse-port] [--metrics :9464]
//
// With N loops, N sockets share the port through SO_REUSEPORT (one per loop); the kernel spreads the
// senders over them by flow. SO_REUSEPORT would let them share it with another process's sockets too, so
// the port is first claimed with a plain socket: a port already in use is an error unless --reuse-port asks
// to share it.
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc
import ExampleSupport
import LoopSocket

/// Sends each datagram straight back; the callbacks run inline on the socket's loop, so the echoes queued
/// during one `recvmmsg` batch leave together with one `sendmmsg`. One per socket, used only on its loop.
final class UDPEchoDelegate: GCDAsyncUdpSocketDelegate {
    /// Datagrams echoed, printed at exit as the C yardstick does (the instruction-count script divides by it).
    var echoed = 0

    func udpSocket(_ sock: GCDAsyncUdpSocket, didReceive data: Data, fromAddress address: Data, withFilterContext filterContext: Any?) {
        echoed &+= 1
        sock.send(data, toAddress: address, withTimeout: -1, tag: 0)
    }

    func udpSocketDidClose(_ sock: GCDAsyncUdpSocket, withError error: Error?) {
        if let error { ServerArguments.announce("udp-echo-server: socket closed: \(error)") }
    }
}

/// Binds a plain socket (no SO_REUSEPORT) to the port and closes it again: fails with a clear message when
/// another socket holds the port; for port 0, the free port the kernel gave it.
func claimPort(_ arguments: ServerArguments, on loop: EventLoop) -> UInt16 {
    let probe = GCDAsyncUdpSocket(delegate: nil, delegateQueue: nil, loop: loop)
    defer { probe.close() }
    do {
        try probe.bind(toPort: arguments.port, interface: arguments.host)
    } catch {
        let inUse = (error as? GCDAsyncUdpSocketError)?.errno == .addressInUse
        ServerArguments.fail("cannot bind UDP \(arguments.host ?? "*"):\(arguments.port): \(error)"
            + (inUse ? " (another process has the port; to share it, start both with --reuse-port)" : ""))
    }
    return probe.localPort()
}

let arguments = ServerArguments.parse(.init(
    name: "udp-echo-server",
    summary: "Echoes every datagram back to its sender, the GCDAsyncUdpSocket way (recvmmsg/sendmmsg batches),\n"
        + "on the project's event loops, a socket per loop.",
    tls: false, reusePort: true))
let group = arguments.makeGroup(name: "udp-echo")
var delegates: [UDPEchoDelegate] = []
var sockets: [GCDAsyncUdpSocket] = []
var port = arguments.reusePort ? arguments.port : claimPort(arguments, on: group.loops[0])
for loop in group.loops {
    let delegate = UDPEchoDelegate()
    delegates.append(delegate)
    let socket = GCDAsyncUdpSocket(delegate: delegate, delegateQueue: nil, loop: loop)
    do {
        if group.loops.count > 1 || arguments.reusePort { try socket.enableReusePort(true) }
        socket.setReceiveBatchSize(64)  // the most one readiness event drains, as the C yardstick does
        try socket.bind(toPort: port, interface: arguments.host)
        try socket.beginReceiving()
        // 4 MiB socket buffers, as the C yardstick sets: with a datagram in flight per sender, the default
        // (about 200 KiB, some 250 small datagrams) overflows at 1,000 senders whenever the loop falls behind.
        for fd in [socket.socket4FD(), socket.socket6FD()] where fd >= 0 {
            var size: Int32 = 4 << 20
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    } catch {
        ServerArguments.fail("cannot bind UDP \(arguments.host ?? "*"):\(port): \(error)")
    }
    port = socket.localPort()  // port 0: the others take the port the first one got
    sockets.append(socket)
}
ServerArguments.announce("udp-echo-server bound to \(arguments.host ?? "*") port \(port) with \(group.loops.count) loop(s)")
let metrics = arguments.serveMetrics(of: group)
ServerArguments.waitForTermination()
metrics?.close()
for socket in sockets { socket.close() }
try? group.shutdownGracefully()
// The loops have stopped: the counters are no longer touched.
ServerArguments.announce("udp-echo-server: \(delegates.reduce(0) { $0 + $1.echoed }) datagrams echoed")
