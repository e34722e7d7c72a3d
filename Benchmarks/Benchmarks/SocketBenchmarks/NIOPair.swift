import Dispatch
import NIOCore
import NIOPosix

/// nio-echo-server's handler: write back what is read, flush at the end of the read burst.
final class NIOEchoHandler: ChannelInboundHandler, Sendable {
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

/// A ping-pong client: write 64 bytes, wait until 64 bytes came back, repeat. Loop-confined.
final class NIOPingHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?
    private var payload: ByteBuffer
    private var received = 0
    private var remaining = 0

    init() {
        payload = ByteBuffer(repeating: 0x5A, count: messageSize)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// On the loop.
    func start(_ count: Int) {
        remaining = count
        received = 0
        context!.writeAndFlush(wrapOutboundOut(payload), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytes
        guard received >= messageSize else { return }
        precondition(received == messageSize)
        received = 0
        remaining -= 1
        if remaining == 0 {
            batchDone.signal()
        } else {
            context.writeAndFlush(wrapOutboundOut(payload), promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

private func makeServer(_ group: MultiThreadedEventLoopGroup) -> any Channel {
    let handler = NIOEchoHandler()
    return try! ServerBootstrap(group: group)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(handler)
            }
        }
        .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
        .childChannelOption(.maxMessagesPerRead, value: 16)
        .childChannelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator())
        .bind(host: "127.0.0.1", port: 0).wait()
}

/// A SwiftNIO echo server and client on the same single loop.
final class NIOPair: @unchecked Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let server: any Channel
    let clientChannel: any Channel
    let client = NIOPingHandler()

    init() {
        server = makeServer(group)
        let client = self.client
        clientChannel = try! ClientBootstrap(group: group)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(client)
                }
            }
            .connect(host: "127.0.0.1", port: server.localAddress!.port!).wait()
    }

    func run(_ count: Int) {
        let client = self.client
        clientChannel.eventLoop.execute { client.start(count) }
        batchDone.wait()
    }
}

/// A SwiftNIO echo server on its own loop, driven by a blocking client on the benchmark thread.
final class NIOServerOnly: @unchecked Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let server: any Channel
    let client: BlockingClient

    init() {
        server = makeServer(group)
        client = BlockingClient(port: server.localAddress!.port!)
    }
}

let nioPair = NIOPair()
let nioRawPair = NIOServerOnly()
