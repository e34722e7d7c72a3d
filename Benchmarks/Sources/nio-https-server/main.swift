// nio-https-server: the HTTPS peer of the project's `http-hello --tls-cert --tls-key`: SwiftNIO's HTTP/1.1
// server pipeline behind swift-nio-ssl's NIOSSLServerHandler (BoringSSL inside swift-nio-ssl, not the system
// OpenSSL), TLS 1.2 and 1.3, ALPN http/1.1. Every request is answered with 200, "Content-Length: 5",
// "Content-Type: text/plain" and the body "hello"; connections stay open unless the client says close.
//
//     nio-https-server --port 8443 --cert cert.pem --key key.pem [--host 127.0.0.1] [--loops N]
//
// (`--tls-cert`/`--tls-key` are accepted too, as http-hello spells them.) One event loop by default.
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
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
                // close() sends close_notify through NIOSSLHandler before the FIN, as nginx and http-hello do.
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

var certificateFile = ""
var keyFile = ""
let arguments = PeerServerArguments.parse(name: "nio-https-server", extraUsage: " --cert FILE --key FILE") { flag, next in
    switch flag {
    case "--cert", "--tls-cert":
        guard let file = next() else { PeerServerArguments.fail("\(flag) needs a file") }
        certificateFile = file
    case "--key", "--tls-key":
        guard let file = next() else { PeerServerArguments.fail("\(flag) needs a file") }
        keyFile = file
    default:
        return false
    }
    return true
}
if certificateFile.isEmpty || keyFile.isEmpty {
    PeerServerArguments.fail("--cert FILE and --key FILE are required")
}

let sslContext: NIOSSLContext
do {
    let chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
    let key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
    var configuration = TLSConfiguration.makeServerConfiguration(
        certificateChain: chain.map { .certificate($0) },
        privateKey: .privateKey(key)
    )
    configuration.minimumTLSVersion = .tlsv12
    configuration.maximumTLSVersion = .tlsv13
    configuration.applicationProtocols = ["http/1.1"]
    sslContext = try NIOSSLContext(configuration: configuration)
} catch {
    PeerServerArguments.fail("cannot load \(certificateFile) / \(keyFile): \(error)")
}

let group = MultiThreadedEventLoopGroup(numberOfThreads: arguments.loops)
let body = ByteBuffer(string: "hello")
let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 4096)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
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
PeerServerArguments.announce("nio-https-server listening on \(arguments.host) port \(channel.localAddress?.port ?? arguments.port) with \(arguments.loops) loop(s), TLS")
PeerServerArguments.waitForTermination()
try? channel.close().wait()
try? group.syncShutdownGracefully()
