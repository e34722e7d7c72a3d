import EpollLoop
import FoundationEssentials
import HTTPHello
import LoopSocket

/// A server started inside the test process, on port 0 (the kernel picks a free port, so tests never clash),
/// on a group of its own or on one the test shares with the load. Copy this into your suite and put your
/// own server's delegate in place of the two below.
final class InProcessServer: Sendable {
    /// The loops the server runs on.
    let group: EventLoopGroup
    /// The port the kernel gave it.
    let port: UInt16
    private let listener: GCDAsyncSocket
    private let delegate: any GCDAsyncSocketDelegate & Sendable
    private let ownsGroup: Bool

    /// echo-server's server: every byte read is written straight back, inline on the loop.
    static func echo(on group: EventLoopGroup? = nil) throws -> InProcessServer {
        try InProcessServer(delegate: Echo(), group: group)
    }

    /// http-hello's server (the HTTPHello library: `200 Hello, World!` to every GET).
    static func httpHello(on group: EventLoopGroup? = nil) throws -> InProcessServer {
        try InProcessServer(delegate: HTTPHelloServer(), group: group)
    }

    private init(delegate: any GCDAsyncSocketDelegate & Sendable, group: EventLoopGroup?) throws {
        self.delegate = delegate
        ownsGroup = group == nil
        let group = try group ?? EventLoopGroup(numberOfLoops: 1, name: "perf-test-server")
        self.group = group
        listener = GCDAsyncSocket(delegate: delegate, delegateQueue: nil, loop: group.loops[0], group: group)
        do {
            try listener.accept(onInterface: "127.0.0.1", port: 0)
        } catch {
            if ownsGroup { try? group.shutdownGracefully(timeout: .seconds(10)) }
            throw error
        }
        port = listener.localPort
    }

    /// Stops listening, and stops the loops when they are the server's own.
    func stop() throws {
        listener.disconnect()
        if ownsGroup { try group.shutdownGracefully(timeout: .seconds(10)) }
    }

    /// echo-server's delegate.
    private final class Echo: GCDAsyncSocketDelegate, Sendable {
        func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
            newSocket.readData(withTimeout: -1, tag: 0)
        }

        func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
            sock.write(data, withTimeout: -1, tag: 0)
            sock.readData(withTimeout: -1, tag: 0)
        }
    }
}
