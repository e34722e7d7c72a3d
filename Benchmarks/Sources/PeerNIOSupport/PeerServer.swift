import NIOCore
import NIOPosix
import PeerServerSupport

/// The one way every SwiftNIO peer server listens: the same server and child options (backlog 4096,
/// `SO_REUSEADDR`, `TCP_NODELAY`, 16 reads per wakeup, the adaptive allocator), the "NAME listening on HOST
/// port P with N loop(s)" line compare.sh waits for, and a clean stop on SIGINT/SIGTERM.
public enum PeerServer {
    /// Serves with `initializeChild` setting up each accepted channel's pipeline (on its loop), until told to
    /// stop. `suffix` ends the announce line (", TLS").
    public static func run(
        name: String,
        arguments: PeerServerArguments,
        suffix: String = "",
        initializeChild: @escaping @Sendable (any Channel) throws -> Void
    ) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: arguments.loops)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try initializeChild(channel) }
            }
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator())
        let channel: any Channel
        do {
            channel = try bootstrap.bind(host: arguments.host, port: arguments.port).wait()
        } catch {
            PeerServerArguments.fail("cannot listen on \(arguments.host):\(arguments.port): \(error)")
        }
        let port = channel.localAddress?.port ?? arguments.port
        PeerServerArguments.announce("\(name) listening on \(arguments.host) port \(port) with \(arguments.loops) loop(s)\(suffix)")
        PeerServerArguments.waitForTermination()
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }
}
