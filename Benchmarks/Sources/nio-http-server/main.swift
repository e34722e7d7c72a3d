// nio-http-server: a keep-alive HTTP/1.1 "hello" server on SwiftNIO's NIOHTTP1 (the standard server pipeline:
// request decoder, response encoder, pipelining helper), the peer of the project's http-hello.
// Every request is answered with 200, "Content-Length: 5", "Content-Type: text/plain" and the body "hello".
//
//     nio-http-server --port 8080 [--host 127.0.0.1] [--loops N]     (one loop by default)
import NIOCore
import NIOHTTP1
import NIOPosix
import PeerServerSupport

final class HelloHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let body: ByteBuffer
    private var keepAlive = true
    private var version = HTTPVersion.http1_1

    init(body: ByteBuffer) {
        self.body = body
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            keepAlive = request.isKeepAlive
            version = request.version
        case .body:
            break
        case .end:
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "5")
            headers.add(name: "Content-Type", value: "text/plain")
            if !keepAlive {
                headers.add(name: "Connection", value: "close")
            }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            if keepAlive {
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            } else {
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                    loopBound.value.close(promise: nil)
                }
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

let arguments = PeerServerArguments.parse(name: "nio-http-server")
let group = MultiThreadedEventLoopGroup(numberOfThreads: arguments.loops)
let body = ByteBuffer(string: "hello")
let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 4096)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(HelloHandler(body: body))
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
PeerServerArguments.announce("nio-http-server listening on \(arguments.host) port \(channel.localAddress?.port ?? arguments.port) with \(arguments.loops) loop(s)")
PeerServerArguments.waitForTermination()
try? channel.close().wait()
try? group.syncShutdownGracefully()
