// nio-udp-echo-server: SwiftNIO's UDP echo (DatagramBootstrap, vector reads of up to 64 datagrams per
// recvmmsg, each datagram written back to its sender, flushed at the end of each read burst), the peer of
// the project's udp-echo-server in Benchmarks/udp-compare.sh.
//
//     nio-udp-echo-server --port 9000 [--host 127.0.0.1] [--loops N]     (one loop by default)
//
// Configured as udp-echo-server and the C udp_echo_server are: batches of 64, 4 MiB socket buffers.
import NIOCore
import NIOPosix
import Glibc
import PeerServerSupport
import Synchronization

final class DatagramEchoHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    /// Datagrams echoed, printed at exit as udp-echo-server and the C server do (for the instruction counts
    /// of Benchmarks/profile/udp-instructions-per-datagram.sh).
    let echoed = Atomic<Int>(0)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        echoed.add(1, ordering: .relaxed)
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An ICMP error for one peer: the socket works on (closing would stop every flow).
    }
}

let name = "nio-udp-echo-server"
let arguments = PeerServerArguments.parse(name: name)
let group = MultiThreadedEventLoopGroup(numberOfThreads: arguments.loops)
let handler = DatagramEchoHandler()
let bootstrap = DatagramBootstrap(group: group)
    .channelOption(.socketOption(.so_reuseaddr), value: 1)
    .channelOption(ChannelOptions.Types.SocketOption(level: NIOBSDSocket.OptionLevel(rawValue: SOL_SOCKET), name: NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: arguments.loops > 1 ? 1 : 0)
    .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
    .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
    .channelOption(.datagramVectorReadMessageCount, value: 64)
    // A vector read splits the allocator's one buffer between its messages: the default 2,048 bytes would
    // leave 32 per datagram and truncate a 64-byte one. 2 KiB each, as a plain read would give one datagram.
    .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64 * 2_048))
    .channelOption(.maxMessagesPerRead, value: 4)
    .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
    }
var channels: [any Channel] = []
do {
    // With several loops, one socket per loop on the same port (SO_REUSEPORT), as udp-echo-server does.
    var port = arguments.port
    for _ in 0..<arguments.loops {
        let channel = try bootstrap.bind(host: arguments.host, port: port).wait()
        port = channel.localAddress?.port ?? port
        channels.append(channel)
    }
} catch {
    PeerServerArguments.fail("cannot bind \(arguments.host):\(arguments.port): \(error)")
}
let port = channels.first?.localAddress?.port ?? arguments.port
PeerServerArguments.announce("\(name) bound to \(arguments.host) port \(port) with \(arguments.loops) loop(s)")
PeerServerArguments.waitForTermination()
for channel in channels { try? channel.close().wait() }
try? group.syncShutdownGracefully()
print("\(name): \(handler.echoed.load(ordering: .relaxed)) datagrams echoed")
