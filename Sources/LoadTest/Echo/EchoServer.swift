import EpollLoop
import FoundationEssentials
import LoopSocket

/// An echo server inside the process, on its own event loop group: the target of `loadtest` with no
/// arguments, and of the tests.
///
/// ```swift
/// let server = try EchoServer()          // 127.0.0.1, a free port, one loop
/// print(server.port)
/// try server.stop()
/// ```
package final class EchoServer: Sendable {
    /// Reads whatever arrives and writes it straight back, inline on the loop.
    private final class Echo: GCDAsyncSocketDelegate, Sendable {
        func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
            newSocket.readData(withTimeout: -1, tag: 0)
        }

        func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
            sock.write(data, withTimeout: -1, tag: 0)
            sock.readData(withTimeout: -1, tag: 0)
        }
    }

    /// The server's loops.
    package let group: EventLoopGroup
    private let listener: GCDAsyncSocket
    private let delegate = Echo()
    /// The port it listens on.
    package let port: UInt16

    /// Starts listening on `host` (default 127.0.0.1) and `port` (default 0: any free port).
    package init(host: String = "127.0.0.1", port: UInt16 = 0, loops: Int = 1) throws {
        group = try EventLoopGroup(numberOfLoops: loops, name: "echo-server")
        listener = GCDAsyncSocket(delegate: delegate, delegateQueue: nil, loop: group.loops[0], group: group)
        do {
            try listener.accept(onInterface: host, port: port)
        } catch {
            try? group.shutdownGracefully()
            throw error
        }
        self.port = listener.localPort
    }

    /// Stops listening, closes every connection and joins the loops' threads.
    package func stop() throws {
        listener.disconnect()
        try group.shutdownGracefully(timeout: .seconds(10))
    }
}
