// nio-async-echo-server: the echo server written with SwiftNIO's async/await bridge, NIOAsyncChannel, one
// child task per connection in a discarding task group: the peer of the project's async-echo-server.
//
//     nio-async-echo-server --port 9000 [--host 127.0.0.1] [--loops N] [--executor global|loop]
//
// --executor global (the default) runs the connection tasks on Swift's global concurrent executor, as
// SwiftNIO's documentation shows; --executor loop first installs NIO's singleton event loop group (sized
// by --loops) as the global executor (NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor),
// so that tasks and I/O share the loop threads.
import Dispatch
import NIOCore
import NIOPosix
import PeerServerSupport

nonisolated(unsafe) var executorMode = "global"
let arguments = PeerServerArguments.parse(name: "nio-async-echo-server", extraUsage: " [--executor global|loop]") { flag, value in
    guard flag == "--executor" else { return false }
    guard let mode = value(), mode == "global" || mode == "loop" else {
        PeerServerArguments.fail("--executor takes 'global' or 'loop'")
    }
    executorMode = mode
    return true
}

let group: MultiThreadedEventLoopGroup
if executorMode == "loop" {
    NIOSingletons.groupLoopCountSuggestion = arguments.loops
    guard NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() else {
        PeerServerArguments.fail("cannot install SwiftNIO's event loop group as the global executor")
    }
    group = MultiThreadedEventLoopGroup.singleton
} else {
    group = MultiThreadedEventLoopGroup(numberOfThreads: arguments.loops)
}

let server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
do {
    server = try await ServerBootstrap(group: group)
        .serverChannelOption(.backlog, value: 4096)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
        .childChannelOption(.maxMessagesPerRead, value: 16)
        .childChannelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator())
        .bind(host: arguments.host, port: arguments.port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
} catch {
    PeerServerArguments.fail("cannot listen on \(arguments.host):\(arguments.port): \(error)")
}
PeerServerArguments.announce("nio-async-echo-server listening on \(arguments.host) port \(server.channel.localAddress?.port ?? arguments.port) with \(arguments.loops) loop(s), executor \(executorMode)")

// SIGINT/SIGTERM: close the listening channel, which ends the stream of connections.
let serverChannel = server.channel
DispatchQueue.global().async {
    PeerServerArguments.waitForTermination()
    serverChannel.close(promise: nil)
}

try? await withThrowingDiscardingTaskGroup { tasks in
    try await server.executeThenClose { connections in
        for try await connection in connections {
            tasks.addTask {
                do {
                    try await connection.executeThenClose { inbound, outbound in
                        for try await chunk in inbound {
                            try await outbound.write(chunk)
                        }
                    }
                } catch {
                    // Reset by the peer, or closed at shutdown: either way the connection is done.
                }
            }
        }
    }
    tasks.cancelAll()
}
if executorMode != "loop" {
    try? await group.shutdownGracefully()
}
