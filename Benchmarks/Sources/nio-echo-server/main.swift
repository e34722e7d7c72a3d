// nio-echo-server: SwiftNIO's classic echo server (a ChannelInboundHandler writing back what it reads and
// flushing at the end of each read burst), the peer of the project's echo-server in Benchmarks/compare.sh.
//
//     nio-echo-server --port 9000 [--host 127.0.0.1] [--loops N]     (one loop by default)
//
// The pipeline holds only the echo handler (no BackPressureHandler, unlike NIO's example): the leanest
// SwiftNIO echo, the same job the project's echo-server and the C reference do.
import NIOCore
import NIOPosix
import PeerServerSupport

final class EchoHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

let arguments = PeerServerArguments.parse(name: "nio-echo-server")
let group = MultiThreadedEventLoopGroup(numberOfThreads: arguments.loops)
let handler = EchoHandler()
let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 4096)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(handler)
        }
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
PeerServerArguments.announce("nio-echo-server listening on \(arguments.host) port \(channel.localAddress?.port ?? arguments.port) with \(arguments.loops) loop(s)")
PeerServerArguments.waitForTermination()
try? channel.close().wait()
try? group.syncShutdownGracefully()
