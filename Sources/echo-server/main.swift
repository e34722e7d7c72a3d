// echo-server: echoes every byte back, the GCDAsyncSocket way, on the project's event loops.
//
//     echo-server --port 9000 [--host 127.0.0.1] [--loops N] [--tls-cert cert.pem --tls-key key.pem] [--metrics :9464]
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc
import ExampleSupport
import LoopSocket

/// Reads whatever arrives and writes it straight back; the callbacks run inline on each socket's loop.
/// With TLS, each connection starts its handshake first; the reads queued after it are over TLS.
final class EchoDelegate: GCDAsyncSocketDelegate {
    let tls: TLSConfiguration?

    init(tls: TLSConfiguration?) {
        self.tls = tls
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        if let tls { newSocket.startTLS(tls) }
        newSocket.readData(withTimeout: -1, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        sock.write(data, withTimeout: -1, tag: 0)
        sock.readData(withTimeout: -1, tag: 0)
    }
}

/// Serves until SIGINT/SIGTERM, then shuts down. The sockets, delegate and loops are this function's locals,
/// not globals, so that they are all released before the process exits: a build with AddressSanitizer's
/// leak check (`--sanitize=address`) would otherwise report a live listener's weak-reference side table,
/// which it cannot see through the object's encoded reference count, and exit 1.
func serve(_ arguments: ServerArguments) {
    let group = arguments.makeGroup(name: "echo")
    let tls = arguments.tlsConfiguration()
    let delegate = EchoDelegate(tls: tls)
    let listener = GCDAsyncSocket(delegate: delegate, delegateQueue: nil, loop: group.loops[0], group: group)
    arguments.listen { try listener.accept(onInterface: arguments.host, port: arguments.port) }
    arguments.announceListening("echo-server", port: listener.localPort, loops: group.loops.count, tls: tls != nil)
    let metrics = arguments.serveMetrics(of: group)
    ServerArguments.waitForTermination()
    metrics?.close()
    listener.disconnect()
    try? group.shutdownGracefully()
}

serve(ServerArguments.parse(.init(
    name: "echo-server",
    summary: "Echoes every byte back to its sender, the GCDAsyncSocket way, on the project's event loops.")))
