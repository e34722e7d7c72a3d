// nio-echo-server: SwiftNIO's classic echo server (a ChannelInboundHandler writing back what it reads and
// flushing at the end of each read burst), the peer of the project's echo-server in Benchmarks/compare.sh.
//
//     nio-echo-server --port 9000 [--host 127.0.0.1] [--loops N]     (one loop by default)
//
// The pipeline holds only the echo handler (no BackPressureHandler, unlike NIO's example): the leanest
// SwiftNIO echo, the same job the project's echo-server and the C reference do.
import NIOCore
import NIOPosix
import PeerNIOSupport
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

let handler = EchoHandler()
PeerServer.run(name: "nio-echo-server", arguments: PeerServerArguments.parse(name: "nio-echo-server")) { channel in
    try channel.pipeline.syncOperations.addHandler(handler)
}
